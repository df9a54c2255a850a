"""The whole mail system in one work directory: Postfix (transport) → LMTP → Dovecot (mailbox) ←
IMAP/POP3 proxy Dovecot (access).

    WORK/mail.json     ports, users, mail dir, TLS (no secret): what ``status`` and clients read
    WORK/passwords     user:password per provisioned user (0600; never printed)
    WORK/tls/          the self-signed certificate (when TLS is on)
    WORK/transport/    Postfix's configuration, queue, data directory and log
    WORK/mailbox/      the mailbox Dovecot's configuration, passdb, run/ (sockets), state, log
    WORK/access/       the access Dovecot's configuration, run/, state, log
    MAIL_DIR/userN/    Maildir mailboxes (``--mail-dir``; default WORK/maildirs)

Started in the order mail flows back from (mailbox, access, transport), so each server finds
the one it talks to listening; stopped in the reverse order. ``stop`` leaves no process and
removes the runtime files (sockets, pid files); configuration, queue and mailboxes stay, so a
later start resumes with the same users and mail.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from caplab.systems.mail import dovecot, transport, users
from caplab.systems.mail.content import DEFAULT_RULES
from caplab.systems.mail.errors import MailError
from caplab.systems.mail.osuser import ServiceUser
from caplab.systems.mail.processes import Server
from caplab.systems.mail.tls import self_signed

ROLES = ("transport", "access", "mailbox")
STATE_FILE = "mail.json"


@dataclass(frozen=True)
class Ports:
    """Every listener; 0 at start means a free port. TLS-only ones are None without TLS."""

    smtp: int = 0
    submission: int | None = 0
    smtps: int | None = 0
    lmtp: int = 0
    imap: int = 0
    """The mailbox instance's IMAP (the proxy's backend)."""
    pop3: int = 0
    proxy: int = 0
    """The access instance's IMAP (STARTTLS when TLS is on): what clients use."""
    proxy_imaps: int | None = 0
    proxy_pop3: int = 0
    proxy_pop3s: int | None = 0


DEFAULT_CONNECTIONS = 2000
"""Clients each role serves at once. Postfix and Dovecot default to 100 processes per service, and
a user of a study holds a session open on each protocol (a polling IMAP client, an SMTP client
that keeps its connection): at their defaults the 101st user would wait for a process whatever
the hardware, so the limit a study found would be a setting, not the profile."""


@dataclass(frozen=True)
class Settings:
    work_dir: Path
    users: int
    mail_dir: Path | None = None
    ports: Ports = Ports()
    tls: bool = True
    content_rules: int = DEFAULT_RULES
    max_connections: int = DEFAULT_CONNECTIONS


class MailSystem:
    """One work directory (see the module docstring); ``start`` builds or resumes it."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir.resolve()
        self.user = ServiceUser.for_servers()

    @property
    def state_file(self) -> Path:
        return self.work_dir / STATE_FILE

    @property
    def passwords_file(self) -> Path:
        return self.work_dir / "passwords"

    def state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            raise MailError(
                f"no mail system in {self.work_dir} (start one with --data-dir {self.work_dir})"
            ) from None
        return state

    def servers(self) -> dict[str, Server]:
        """Role → its master process, in start order."""
        return {
            "mailbox": dovecot.instance(self.work_dir / "mailbox", "mailbox", self.user),
            "access": dovecot.instance(self.work_dir / "access", "access", self.user),
            "transport": transport.instance(self.work_dir / "transport"),
        }

    # start / stop ---------------------------------------------------------------------------

    def start(self, settings: Settings) -> dict[str, Any]:
        """Provisions, configures and starts the three roles; returns the status once every
        listener answers. A failure stops whatever had started."""
        transport.require_root()
        for role, server in self.servers().items():
            if server.pid() is not None:
                raise MailError(f"the {role} role of {self.work_dir} is already running; stop it first")
        work = self.work_dir
        work.mkdir(parents=True, exist_ok=True)
        work.chmod(0o755)
        _check_reachable(work)
        mail_dir = (settings.mail_dir or work / "maildirs").resolve()
        _check_reachable(mail_dir)
        self.user.make_dir(mail_dir, 0o700)
        ports = _choose_ports(settings.ports, settings.tls)
        _check_free(ports)  # Postfix's master dies of a taken port before it can log why
        mailbox_home, access_home, transport_home = work / "mailbox", work / "access", work / "transport"
        dovecot.prepare(mailbox_home, self.user)
        dovecot.prepare(access_home, self.user)
        transport.prepare(transport_home, self.user)
        passdb = mailbox_home / "passdb"
        known = users.provision(self.passwords_file, passdb, settings.users, self.user)
        cert = self_signed(work / "tls", self.user) if settings.tls else None
        backend = dovecot.MailboxPorts(lmtp=ports.lmtp, imap=ports.imap, pop3=ports.pop3)
        access = dovecot.AccessPorts(ports.proxy, ports.proxy_pop3, ports.proxy_imaps, ports.proxy_pop3s)
        limit = settings.max_connections
        conf = dovecot.mailbox_config(mailbox_home, self.user, mail_dir, passdb, backend, limit)
        self.user.write_private(mailbox_home / "dovecot.conf", conf, 0o644)
        conf = dovecot.access_config(access_home, self.user, cert, passdb, access, backend, limit)
        self.user.write_private(access_home / "dovecot.conf", conf, 0o644)
        transport.write_config(
            transport_home,
            self.user,
            transport.TransportPorts(ports.smtp, ports.submission, ports.smtps),
            ports.lmtp,
            sorted(known),
            cert,
            mailbox_home / "run" / "auth-client",
            settings.content_rules,
            limit,
        )
        state = {
            "users": settings.users,
            "domain": users.DOMAIN,
            "mail_dir": str(mail_dir),
            "tls": settings.tls,
            "certificate": str(cert.cert) if cert else None,
            "content_rules": settings.content_rules,
            "max_connections": limit,
            "ports": asdict(ports),
        }
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")
        listeners = {
            "mailbox": [ports.lmtp, ports.imap, ports.pop3],
            "access": [p for p in (ports.proxy, ports.proxy_pop3, ports.proxy_imaps, ports.proxy_pop3s) if p],
            "transport": [p for p in (ports.smtp, ports.submission, ports.smtps) if p],
        }
        try:
            for role, server in self.servers().items():
                server.start(listeners[role])
        except BaseException:
            self.stop()
            raise
        return self.status()

    def stop(self) -> bool:
        """Stops every role (transport first, so nothing is delivered to a stopped mailbox) and
        removes the runtime files. False if nothing was running."""
        servers = self.servers()
        stopped = [servers["transport"].stop()]
        with ThreadPoolExecutor(2) as pool:  # each Dovecot master takes about a second to end
            stopped += pool.map(lambda role: servers[role].stop(), ("access", "mailbox"))
        for role in ("mailbox", "access"):
            shutil.rmtree(self.work_dir / role / "run", ignore_errors=True)
        for name in ("pid", "private", "public"):
            shutil.rmtree(self.work_dir / "transport" / "queue" / name, ignore_errors=True)
        return any(stopped)

    def remove(self) -> None:
        """Deletes the work directory and the mailboxes (stop first)."""
        mail_dir = Path(self.state().get("mail_dir", self.work_dir / "maildirs"))
        shutil.rmtree(mail_dir, ignore_errors=True)
        shutil.rmtree(self.work_dir, ignore_errors=True)

    # what is there --------------------------------------------------------------------------

    def role_pids(self) -> dict[str, list[int]]:
        return {role: server.pids() for role, server in self.servers().items()}

    def roles_running(self) -> dict[str, bool]:
        """Whether each role's master is alive: what the foreground loop watches twice a second.
        Its tree is not walked — with a process per session, a thousand users made that walk a
        tenth of a core, taken from the system under test."""
        return {role: server.pid() is not None for role, server in self.servers().items()}

    def role_matches(self) -> dict[str, str]:
        """For a study's ``roles:``: a command-line substring only each role's master carries
        (its configuration path); the role then takes in the master's descendants."""
        return {role: str(server.config) for role, server in self.servers().items()}

    def delivered(self) -> dict[str, int]:
        """Messages in each provisioned user's Maildir (``new`` and ``cur`` files)."""
        state = self.state()
        mail_dir = Path(state["mail_dir"])
        return {
            users.user_name(i): _count_messages(mail_dir / users.user_name(i))
            for i in range(1, int(state["users"]) + 1)
        }

    def queued(self) -> int:
        """Messages in Postfix's queue not yet delivered (incoming, active, deferred, hold)."""
        queue = self.work_dir / "transport" / "queue"
        return sum(
            sum(1 for p in (queue / name).rglob("*") if p.is_file())
            for name in ("incoming", "active", "deferred", "hold")
            if (queue / name).exists()
        )

    def status(self) -> dict[str, Any]:
        state = self.state()
        pids = self.role_pids()
        delivered = self.delivered()
        return {
            "work_dir": str(self.work_dir),
            "running": {role: bool(p) for role, p in pids.items()},
            "users": state["users"],
            "domain": state["domain"],
            "passwords_file": str(self.passwords_file),
            "mail_dir": state["mail_dir"],
            "tls": state["tls"],
            "certificate": state["certificate"],
            "content_rules": state["content_rules"],
            "ports": state["ports"],
            "roles": {role: {"match": m, "pids": pids[role]} for role, m in self.role_matches().items()},
            "messages_delivered": sum(delivered.values()),
            "messages_queued": self.queued(),
        }


def _count_messages(maildir: Path) -> int:
    total = 0
    for sub in ("new", "cur"):
        with contextlib.suppress(FileNotFoundError):
            total += sum(1 for _ in (maildir / sub).iterdir())
    return total


def _choose_ports(asked: Ports, tls: bool) -> Ports:
    """Free loopback ports for the zeros; the TLS-only listeners dropped without TLS."""
    chosen: dict[str, int | None] = {}
    taken: set[int] = {p for p in asdict(asked).values() if p}
    for name, port in asdict(asked).items():
        if name in ("submission", "smtps", "proxy_imaps", "proxy_pop3s") and not tls:
            chosen[name] = None
        elif port:
            chosen[name] = port
        else:
            chosen[name] = _free_port(taken)
    return Ports(**chosen)  # type: ignore[arg-type]


def _check_free(ports: Ports) -> None:
    for name, port in asdict(ports).items():
        if port is None:
            continue
        with socket.socket() as s:
            # as the servers bind: a closed session's TIME_WAIT (a server that sent QUIT's reply
            # and closed first) does not hold the port, a listener does
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                s.listen()
            except OSError as e:
                option = "--" + name.replace("_", "-") + "-port"
                raise MailError(f"port {port} ({option}) is not free: {e.strerror}") from None


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


def _check_reachable(path: Path) -> None:
    """The service user must enter every existing parent of ``path`` (e.g. not /root)."""
    for parent in path.resolve().parents:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            raise MailError(
                f"the mail servers' user cannot enter {parent}; choose a data directory every user "
                "may reach, e.g. under /tmp or /var/tmp (in a study: under {runtime}, the cell's runtime "
                "directory)"
            )
