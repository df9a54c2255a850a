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
- ``ready`` exits 0 once the cluster is whole (a writable leader, every replica streaming), 1
  before: a study's readiness check that sends nothing to a node's address before its namespace
  exists (where that address would be routed off the machine).
- ``isolate --seconds S`` (a cluster started with ``--netns``) cuts the leader's link for S seconds,
  then heals it, and prints the phases and what the isolated side acknowledged and lost.
- ``stop [--remove]`` stops everything (and deletes the cluster's files).

The password comes from ``$PGHA_PASSWORD`` (start: otherwise a random one); clients find it in the
cluster's ``pgpass`` file (``PGPASSFILE=DIR/pgpass``). It is never printed.
Errors are one line on stderr and exit 1; bad options exit 2.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

import psycopg

from caplab.systems import foreground
from caplab.systems.pgha import failover, partition
from caplab.systems.pgha.cluster import STATE_FILE, Cluster
from caplab.systems.pgha.settings import ETCD_PORT, PG_PORT, REST_PORT, HaError, HaSettings
from caplab.systems.pgpair.server import ServerError

ACTIONS: dict[str, foreground.Action[Cluster]] = {
    "switchover": lambda cluster, options: failover.switchover(cluster, options.candidate),
    "kill-primary": lambda cluster, options: failover.kill_primary(cluster, then_rejoin=options.rejoin),
    "rejoin": lambda cluster, _: {"action": "rejoin", "rejoined_after_s": round(failover.rejoin(cluster), 3)},
    "isolate": lambda cluster, options: partition.isolate(cluster, options.seconds),
    "ready": lambda cluster, _: _ready(cluster),
}
"""The commands of a cluster beyond start, status and stop: each prints what it did as JSON."""


def _ready(cluster: Cluster) -> dict[str, object]:
    if not all(net.exists() for net in cluster.nets):
        raise HaError("not ready: the nodes' namespaces are not there yet")
    if not cluster.members().healthy(cluster.state.sync):
        raise HaError("not ready: the cluster is not whole yet")
    return {"ready": True, "leader": cluster.members().leader_name()}


def parser() -> argparse.ArgumentParser:
    return foreground.parser(
        prog="python -m caplab.systems.pgha",
        description="PostgreSQL nodes managed by Patroni, with etcd as its consensus store.",
        what="cluster",
        actions=ACTIONS,
        start_options=_start_options,
        action_options=_action_options,
    )


def _start_options(start: argparse.ArgumentParser) -> None:
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
    start.add_argument(
        "--netns",
        metavar="SUBNET",
        help="each node in a network namespace of its own on this /24 (auto: a free one of "
        "10.204.0.0/16), so that `isolate` can partition it (default: all on 127.0.0.1)",
    )


def _action_options(name: str, sub: argparse.ArgumentParser) -> None:
    if name == "kill-primary":
        sub.add_argument("--rejoin", action="store_true", help="then restart the old leader's Patroni")
    if name == "switchover":
        sub.add_argument("--candidate", help="the node to lead (default: Patroni chooses)")
    if name == "isolate":
        sub.add_argument(
            "--seconds", type=float, default=30.0, help="how long the leader stays cut off (default 30)"
        )


def main(argv: Sequence[str] | None = None) -> None:
    foreground.main("pgha", argv, parser(), ACTIONS, run, (ServerError, psycopg.Error))


def run(options: argparse.Namespace) -> int:
    return foreground.run(options, start, Cluster.open, ACTIONS)


def start(options: argparse.Namespace) -> int:
    temporary = options.data_dir is None
    data_dir: Path = _temporary_dir() if temporary else options.data_dir
    return foreground.start(
        "pgha",
        options.detach,
        build=lambda: _build_or_resume(data_dir, options),
        leader="leader",
        meant_to_run=lambda: _meant_to_run(data_dir),
        temporary=data_dir.parent if temporary else None,
    )


def _meant_to_run(data_dir: Path) -> bool:
    try:
        return Cluster.open(data_dir).state.running
    except ServerError:  # removed: `stop --remove` from elsewhere
        return False


def _temporary_dir() -> Path:
    """A new directory every user may enter (the servers run as an unprivileged user)."""
    parent = Path(tempfile.mkdtemp(prefix="pgha-"))
    parent.chmod(0o755)
    return parent / "cluster"


def _build_or_resume(data_dir: Path, options: argparse.Namespace) -> Cluster:
    if (data_dir / STATE_FILE).exists():
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
        netns=options.netns,
    )
    return Cluster.create(settings, jobs=options.jobs)
