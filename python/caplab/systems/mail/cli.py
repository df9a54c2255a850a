"""``python -m caplab.systems.mail COMMAND`` (``caplab systems start mail …`` runs ``start``).

- ``start`` provisions ``--users N`` mailboxes, starts the three roles, prints ``listening
  127.0.0.1:SMTP_PORT`` and one ``mail {json}`` line with the status (ports, roles, where the
  passwords are), then stays in the foreground until SIGTERM/SIGINT or ``stop``, and stops every
  server. ``--detach`` returns once all listen, leaving them running. Without ``--data-dir`` the
  system lives in a temporary directory removed when it stops. If a role's master dies, the
  others are stopped and ``start`` exits 1 naming it.
- ``status [--json | --prometheus]``: ports, pids per role, messages delivered (Maildir files) and
  queued; ``--prometheus`` prints them as an exposition (``caplab_mail_messages_delivered``…).
- ``stop [--remove]``: ends every process, removes the runtime files (and with ``--remove`` the
  work directory and the mailboxes).

Passwords are in ``DIR/passwords`` (0600), never printed. Errors are one line on stderr and exit
1; bad options exit 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from caplab.systems import launch
from caplab.systems.mail.content import DEFAULT_RULES
from caplab.systems.mail.errors import MailError
from caplab.systems.mail.system import DEFAULT_CONNECTIONS, MailSystem, Ports, Settings

COMMANDS = ("start", "status", "stop")
POLL_S = 0.5


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m caplab.systems.mail",
        description="Postfix (transport) → LMTP → Dovecot (mailbox), behind a Dovecot IMAP/POP3 "
        "proxy (access).",
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="provision and run the system in the foreground")
    start.add_argument("--users", type=_positive, default=10, help="mailboxes user1…userN (default 10)")
    start.add_argument("--data-dir", type=Path, help="the work directory (default: a temporary one)")
    start.add_argument("--mail-dir", type=Path, help="where the Maildirs live (default: DIR/maildirs)")
    start.add_argument("--no-tls", dest="tls", action="store_false", help="no certificate, no TLS ports")
    start.add_argument(
        "--content-rules", type=int, default=DEFAULT_RULES, help="signatures in each content-check table"
    )
    start.add_argument(
        "--max-connections",
        type=_positive,
        default=DEFAULT_CONNECTIONS,
        help="clients each role serves at once: smtpd processes, proxied and backend IMAP/POP3 sessions "
        f"(default {DEFAULT_CONNECTIONS}; Postfix's and Dovecot's own default is 100)",
    )
    for name, what in (
        ("smtp-port", "Postfix SMTP (STARTTLS offered)"),
        ("submission-port", "Postfix submission (STARTTLS + AUTH required)"),
        ("smtps-port", "Postfix SMTPS (implicit TLS + AUTH)"),
        ("lmtp-port", "the mailbox Dovecot's LMTP"),
        ("imap-port", "the mailbox Dovecot's IMAP (the proxy's backend)"),
        ("pop3-port", "the mailbox Dovecot's POP3 (the proxy's backend)"),
        ("proxy-port", "the access proxy's IMAP (STARTTLS offered)"),
        ("proxy-imaps-port", "the access proxy's IMAPS"),
        ("proxy-pop3-port", "the access proxy's POP3"),
        ("proxy-pop3s-port", "the access proxy's POP3S"),
    ):
        start.add_argument(f"--{name}", type=int, default=0, help=f"{what} (0: a free port)")
    start.add_argument("--detach", action="store_true", help="return once started; `stop` ends it")
    status = commands.add_parser("status", help="ports, processes per role, messages delivered")
    status.add_argument("--data-dir", type=Path, required=True)
    form = status.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="(the default) one JSON document")
    form.add_argument("--prometheus", action="store_true", help="counters as a Prometheus exposition")
    stop = commands.add_parser("stop", help="end every process of the system")
    stop.add_argument("--data-dir", type=Path, required=True)
    stop.add_argument("--remove", action="store_true", help="delete the work directory and mailboxes too")
    return top


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in COMMANDS and args[0] not in ("-h", "--help")):
        args.insert(0, "start")  # `caplab systems start mail --users 100`
    options = parser().parse_args(args)
    try:
        code = run(options)
    except MailError as e:
        print(f"mail: {e}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code)


def run(options: argparse.Namespace) -> int:
    if options.command == "start":
        return start(options)
    system = MailSystem(options.data_dir)
    if options.command == "status":
        status = system.status()
        if options.prometheus:
            print(exposition(status), end="", flush=True)
        else:
            print(json.dumps(status, indent=2), flush=True)
    else:
        system.state()  # a clear error for a directory that holds no system
        system.stop()
        if options.remove:
            system.remove()
    return 0


def start(options: argparse.Namespace) -> int:
    temporary = options.data_dir is None
    work_dir = Path(tempfile.mkdtemp(prefix="caplab-mail-")) if temporary else options.data_dir
    stop = launch.stop_on_signals(options.detach)
    system = MailSystem(work_dir)
    settings = Settings(
        work_dir=work_dir,
        users=options.users,
        mail_dir=options.mail_dir,
        tls=options.tls,
        content_rules=options.content_rules,
        max_connections=options.max_connections,
        ports=Ports(
            smtp=options.smtp_port,
            submission=options.submission_port,
            smtps=options.smtps_port,
            lmtp=options.lmtp_port,
            imap=options.imap_port,
            pop3=options.pop3_port,
            proxy=options.proxy_port,
            proxy_imaps=options.proxy_imaps_port,
            proxy_pop3=options.proxy_pop3_port,
            proxy_pop3s=options.proxy_pop3s_port,
        ),
    )
    try:
        status = system.start(settings)
        print(f"listening 127.0.0.1:{status['ports']['smtp']}", flush=True)
        print(f"mail {json.dumps(status)}", flush=True)
        if options.detach:
            return 0
        while not stop.wait(POLL_S):
            running = system.roles_running()
            if not any(running.values()):
                return 0  # `stop` from elsewhere
            if not all(running.values()):
                dead = ", ".join(role for role, up in running.items() if not up)
                raise MailError(f"the {dead} role stopped on its own (see its log under {system.work_dir})")
        return 0
    finally:
        if not options.detach:
            launch.ignore_signals()  # finish stopping the servers first
            system.stop()
            if temporary:
                shutil.rmtree(work_dir, ignore_errors=True)


def exposition(status: dict[str, Any]) -> str:
    """The status's counters in Prometheus's text format."""
    lines = [
        "# HELP caplab_mail_messages_delivered Messages in the provisioned Maildirs (new and cur files).",
        "# TYPE caplab_mail_messages_delivered gauge",
        f"caplab_mail_messages_delivered {status['messages_delivered']}",
        "# HELP caplab_mail_messages_queued Messages in Postfix's queue not yet delivered.",
        "# TYPE caplab_mail_messages_queued gauge",
        f"caplab_mail_messages_queued {status['messages_queued']}",
        "# HELP caplab_mail_role_processes Live processes of each role.",
        "# TYPE caplab_mail_role_processes gauge",
    ]
    lines += [
        f'caplab_mail_role_processes{{role="{r}"}} {len(v["pids"])}' for r, v in status["roles"].items()
    ]
    return "\n".join(lines) + "\n"
