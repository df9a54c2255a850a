"""``python -m caplab.systems.pgpair COMMAND`` (``caplab systems start pgpair …`` runs ``start``).

- ``start`` builds a pair (or starts the one already in ``--data-dir``), prints ``listening
  127.0.0.1:PORT`` (the primary) and one ``pgpair {json}`` line with the status, then stays in the
  foreground until SIGTERM/SIGINT or ``stop``, and stops both nodes. ``--detach`` returns at once,
  leaving the servers running. Without ``--data-dir`` the pair lives in a temporary directory that
  is removed when it stops. The servers are daemons of their own (``pg_ctl``), so role changes work
  from any process; a ``start`` killed with SIGKILL leaves them running (``stop`` ends them). Given
  the ``--data-dir`` of a stopped pair, ``start`` starts it again in its last roles.
- ``status`` prints the status as JSON: which node is primary, ports, pids per node, replication.
- ``switchover``, ``kill-primary [--detect-delay S] [--rejoin]`` and ``rejoin`` change roles and
  print what they did and how long it took, as JSON.
- ``stop [--remove]`` stops both nodes (and deletes the pair's files).

The password comes from ``$PGPAIR_PASSWORD`` (start: otherwise a random one); clients find it in
the pair's ``pgpass`` file (``PGPASSFILE=DIR/pgpass``). It is never printed.
Errors are one line on stderr and exit 1; bad options exit 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import psycopg

from caplab.systems import launch
from caplab.systems.pgpair import failover
from caplab.systems.pgpair.pair import SYNC_MODES, Pair, PairSettings
from caplab.systems.pgpair.server import ServerError

COMMANDS = ("start", "status", "switchover", "kill-primary", "rejoin", "stop")
POLL_S = 0.5


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m caplab.systems.pgpair",
        description="A PostgreSQL primary and hot standby with streaming replication.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="build (or restart) the pair and run it in the foreground")
    start.add_argument("--data-dir", type=Path, help="the pair's directory (default: a temporary one)")
    start.add_argument("--databases", type=int, default=0, help="databases ag_0… seeded with pgbench -i")
    start.add_argument("--scale", type=int, default=1, help="pgbench scale of each database")
    start.add_argument("--sync", choices=SYNC_MODES, default="off", help="synchronous_commit mode")
    start.add_argument("--port", type=int, default=0, help="node0's port, node1 gets +1 (0: free ports)")
    start.add_argument("--jobs", type=int, default=0, help="databases seeded at once (0: 2 × cores)")
    start.add_argument("--max-connections", type=int, default=200)
    start.add_argument("--detach", action="store_true", help="return once started; `stop` ends it")
    for name in COMMANDS[1:]:
        sub = commands.add_parser(name)
        sub.add_argument("--data-dir", type=Path, required=True)
        if name == "kill-primary":
            sub.add_argument("--detect-delay", type=float, default=1.0, help="seconds before promotion")
            sub.add_argument("--rejoin", action="store_true", help="then rewind the old primary as standby")
        if name == "stop":
            sub.add_argument("--remove", action="store_true", help="delete the pair's files too")
    return top


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in COMMANDS and args[0] not in ("-h", "--help")):
        args.insert(0, "start")  # `caplab systems start pgpair --databases 20`
    options = parser().parse_args(args)
    try:
        code = run(options)
    except (ServerError, psycopg.Error) as e:
        print(f"pgpair: {str(e).strip()}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # `… status | head`
        code = 0
    sys.exit(code)


def run(options: argparse.Namespace) -> int:
    if options.command == "start":
        return start(options)
    pair = Pair.open(options.data_dir)
    if options.command == "status":
        _print(pair.status())
    elif options.command == "switchover":
        _print(failover.switchover(pair).as_dict())
    elif options.command == "kill-primary":
        _print(failover.kill_primary(pair, options.detect_delay, then_rejoin=options.rejoin).as_dict())
    elif options.command == "rejoin":
        _print({"action": "rejoin", "paired_after_s": failover.rejoin(pair)})
    elif options.command == "stop":
        pair.stop()
        if options.remove:
            pair.remove()
    return 0


def start(options: argparse.Namespace) -> int:
    temporary = options.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="pgpair-")) if temporary else options.data_dir
    stop = launch.stop_on_signals(options.detach)
    pair: Pair | None = None
    try:
        if (data_dir / "pgpair.json").exists():
            pair = Pair.open(data_dir)
            _check_same(pair, options)
            pair.resume()
        else:
            settings = PairSettings(
                data_dir=data_dir,
                databases=options.databases,
                scale=options.scale,
                sync=options.sync,
                port=options.port,
                jobs=options.jobs,
                max_connections=options.max_connections,
            )
            pair = Pair.create(settings)
        status = pair.status()
        primary = next(n for n in status["nodes"] if n["name"] == status["primary"])
        print(f"listening 127.0.0.1:{primary['port']}", flush=True)
        print(f"pgpair {json.dumps(status)}", flush=True)
        if options.detach:
            return 0
        while not stop.wait(POLL_S):
            if not Pair.open(data_dir).state.running:
                break  # `stop` from elsewhere
        return 0
    finally:
        if not options.detach:
            _shut(pair, data_dir, temporary)


def _shut(pair: Pair | None, data_dir: Path, temporary: bool) -> None:
    launch.ignore_signals()  # finish stopping the servers first
    try:
        if pair is not None:
            pair.stop()
    finally:
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)


def _check_same(pair: Pair, options: argparse.Namespace) -> None:
    """A pair found in --data-dir is started as it was built; other seeding options are refused."""
    state = pair.state
    if options.databases not in (0, state.databases) or options.scale not in (1, state.scale):
        raise ServerError(
            f"{pair.data_dir} holds a pair of {state.databases} databases at scale {state.scale}; "
            "give a new --data-dir to build another"
        )


def _print(document: object) -> None:
    print(json.dumps(document, indent=2), flush=True)
