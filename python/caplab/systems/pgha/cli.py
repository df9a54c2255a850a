"""``python -m caplab.systems.pgha COMMAND`` (``caplab systems start pgha …`` runs ``start``).

- ``start`` builds a cluster (or starts the one already in ``--data-dir``), prints ``listening
  127.0.0.1:PORT`` (the leader's PostgreSQL) and one ``pgha {json}`` line with the status, then
  stays in the foreground until SIGTERM/SIGINT or ``stop``, and stops etcd, Patroni and
  PostgreSQL. ``--detach`` returns at once, leaving them running. Without ``--data-dir`` the
  cluster lives in a temporary directory removed when it stops.
- ``status`` prints the status as JSON: leader, members (role, state, timeline, lag), pids.
- ``kill-primary [--rejoin]`` SIGKILLs the leader's Patroni and postmaster and prints the phases
  Patroni went through; ``switchover [--candidate NODE]`` asks Patroni's REST API; ``rejoin``
  starts a killed node's Patroni again (it rewinds and follows the new leader).
- ``stop [--remove]`` stops everything (and deletes the cluster's files).

The password comes from ``$PGHA_PASSWORD`` (start: otherwise a random one); clients find it in the
cluster's ``pgpass`` file (``PGPASSFILE=DIR/pgpass``). It is never printed.
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
from caplab.systems.pgha import failover
from caplab.systems.pgha.cluster import Cluster
from caplab.systems.pgha.settings import ETCD_PORT, PG_PORT, REST_PORT, HaSettings
from caplab.systems.pgpair.server import ServerError

COMMANDS = ("start", "status", "switchover", "kill-primary", "rejoin", "stop")
POLL_S = 0.5


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m caplab.systems.pgha",
        description="PostgreSQL nodes managed by Patroni, with etcd as its consensus store.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="build (or restart) the cluster and run it in the foreground")
    start.add_argument("--data-dir", type=Path, help="the cluster's directory (default: a temporary one)")
    start.add_argument("--nodes", type=int, default=2, help="PostgreSQL nodes (default 2)")
    start.add_argument("--databases", type=int, default=0, help="databases ag_0… seeded with pgbench -i")
    start.add_argument("--scale", type=int, default=1, help="pgbench scale of each database")
    start.add_argument("--ttl", type=int, default=30, help="Patroni's leader key TTL, seconds")
    start.add_argument("--loop-wait", type=int, default=10, help="Patroni's HA loop interval, seconds")
    start.add_argument("--retry-timeout", type=int, default=10, help="Patroni's DCS/PostgreSQL retries, s")
    start.add_argument("--sync", choices=("on", "off"), default="off", help="Patroni's synchronous_mode")
    start.add_argument(
        "--port", type=int, default=PG_PORT, help="node0's PostgreSQL port, node i: + i (0: free)"
    )
    start.add_argument("--rest-port", type=int, default=REST_PORT, help="node0's Patroni REST port (0: free)")
    start.add_argument(
        "--etcd-port", type=int, default=ETCD_PORT, help="etcd's client port, peer + 1 (0: free)"
    )
    start.add_argument("--jobs", type=int, default=0, help="databases seeded at once (0: 2 × cores)")
    start.add_argument("--max-connections", type=int, default=200)
    start.add_argument("--detach", action="store_true", help="return once started; `stop` ends it")
    for name in COMMANDS[1:]:
        sub = commands.add_parser(name)
        sub.add_argument("--data-dir", type=Path, required=True)
        if name == "kill-primary":
            sub.add_argument("--rejoin", action="store_true", help="then restart the old leader's Patroni")
        if name == "switchover":
            sub.add_argument("--candidate", help="the node to lead (default: Patroni chooses)")
        if name == "stop":
            sub.add_argument("--remove", action="store_true", help="delete the cluster's files too")
    return top


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in COMMANDS and args[0] not in ("-h", "--help")):
        args.insert(0, "start")  # `caplab systems start pgha --nodes 3`
    options = parser().parse_args(args)
    try:
        code = run(options)
    except (ServerError, psycopg.Error) as e:
        print(f"pgha: {str(e).strip()}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # `… status | head`
        code = 0
    sys.exit(code)


def run(options: argparse.Namespace) -> int:
    if options.command == "start":
        return start(options)
    cluster = Cluster.open(options.data_dir)
    if options.command == "status":
        _print(cluster.status())
    elif options.command == "switchover":
        _print(failover.switchover(cluster, options.candidate))
    elif options.command == "kill-primary":
        _print(failover.kill_primary(cluster, then_rejoin=options.rejoin))
    elif options.command == "rejoin":
        _print({"action": "rejoin", "rejoined_after_s": round(failover.rejoin(cluster), 3)})
    elif options.command == "stop":
        cluster.stop()
        if options.remove:
            cluster.remove()
    return 0


def start(options: argparse.Namespace) -> int:
    temporary = options.data_dir is None
    data_dir = _temporary_dir() if temporary else options.data_dir
    stop = launch.stop_on_signals(options.detach)
    cluster: Cluster | None = None
    try:
        cluster = _build_or_resume(data_dir, options)
        status = cluster.status()
        leader = next(n for n in status["nodes"] if n["name"] == status["leader"])
        print(f"listening 127.0.0.1:{leader['port']}", flush=True)
        print(f"pgha {json.dumps(status)}", flush=True)
        if options.detach:
            return 0
        while not stop.wait(POLL_S):
            if not _meant_to_run(data_dir):
                break  # `stop` (or `stop --remove`) from elsewhere
        return 0
    finally:
        if not options.detach:
            _shut(cluster, data_dir, temporary)


def _meant_to_run(data_dir: Path) -> bool:
    try:
        return Cluster.open(data_dir).state.running
    except ServerError:  # removed
        return False


def _temporary_dir() -> Path:
    """A new directory every user may enter (the servers run as an unprivileged user)."""
    parent = Path(tempfile.mkdtemp(prefix="pgha-"))
    parent.chmod(0o755)
    return parent / "cluster"


def _build_or_resume(data_dir: Path, options: argparse.Namespace) -> Cluster:
    if (data_dir / "pgha.json").exists():
        cluster = Cluster.open(data_dir)
        cluster.resume()
        return cluster
    settings = HaSettings(
        data_dir=data_dir,
        nodes=options.nodes,
        databases=options.databases,
        scale=options.scale,
        ttl=options.ttl,
        loop_wait=options.loop_wait,
        retry_timeout=options.retry_timeout,
        sync=options.sync == "on",
        pg_port=options.port,
        rest_port=options.rest_port,
        etcd_port=options.etcd_port,
        max_connections=options.max_connections,
    )
    return Cluster.create(settings, jobs=options.jobs)


def _shut(cluster: Cluster | None, data_dir: Path, temporary: bool) -> None:
    launch.ignore_signals()  # finish stopping the servers first
    try:
        if cluster is not None:
            cluster.stop()
    finally:
        if temporary:
            shutil.rmtree(data_dir.parent, ignore_errors=True)


def _print(document: object) -> None:
    print(json.dumps(document, indent=2), flush=True)
