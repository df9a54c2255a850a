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
import tempfile
from collections.abc import Sequence
from pathlib import Path

import psycopg

from caplab.systems import foreground
from caplab.systems.pgpair import failover
from caplab.systems.pgpair.pair import STATE_FILE, SYNC_MODES, Pair, PairSettings
from caplab.systems.pgpair.server import ServerError

ACTIONS: dict[str, foreground.Action[Pair]] = {
    "switchover": lambda pair, _: failover.switchover(pair).as_dict(),
    "kill-primary": lambda pair, options: failover.kill_primary(
        pair, options.detect_delay, then_rejoin=options.rejoin
    ).as_dict(),
    "rejoin": lambda pair, _: {"action": "rejoin", "paired_after_s": failover.rejoin(pair)},
}
"""The commands of a pair beyond start, status and stop: each prints what it did as JSON."""


def parser() -> argparse.ArgumentParser:
    return foreground.parser(
        prog="python -m caplab.systems.pgpair",
        description="A PostgreSQL primary and hot standby with streaming replication.",
        what="pair",
        actions=ACTIONS,
        start_options=_start_options,
        action_options=_action_options,
    )


def _start_options(start: argparse.ArgumentParser) -> None:
    start.add_argument("--databases", type=int, default=0, help="databases ag_0… seeded with pgbench -i")
    start.add_argument("--scale", type=int, default=1, help="pgbench scale of each database")
    start.add_argument("--sync", choices=SYNC_MODES, default="off", help="synchronous_commit mode")
    start.add_argument("--port", type=int, default=0, help="node0's port, node1 gets +1 (0: free ports)")
    start.add_argument("--jobs", type=int, default=0, help="databases seeded at once (0: 2 × cores)")
    start.add_argument("--max-connections", type=int, default=200)


def _action_options(name: str, sub: argparse.ArgumentParser) -> None:
    if name == "kill-primary":
        sub.add_argument("--detect-delay", type=float, default=1.0, help="seconds before promotion")
        sub.add_argument("--rejoin", action="store_true", help="then rewind the old primary as standby")


def main(argv: Sequence[str] | None = None) -> None:
    foreground.main("pgpair", argv, parser(), ACTIONS, run, (ServerError, psycopg.Error))


def run(options: argparse.Namespace) -> int:
    return foreground.run(options, start, Pair.open, ACTIONS)


def start(options: argparse.Namespace) -> int:
    temporary = options.data_dir is None
    data_dir: Path = Path(tempfile.mkdtemp(prefix="pgpair-")) if temporary else options.data_dir
    return foreground.start(
        "pgpair",
        options.detach,
        build=lambda: _build_or_resume(data_dir, options),
        leader="primary",
        meant_to_run=lambda: Pair.open(data_dir).state.running,
        temporary=data_dir if temporary else None,
    )


def _build_or_resume(data_dir: Path, options: argparse.Namespace) -> Pair:
    if (data_dir / STATE_FILE).exists():
        pair = Pair.open(data_dir)
        _check_same(pair, options)
        pair.resume()
        return pair
    settings = PairSettings(
        data_dir=data_dir,
        databases=options.databases,
        scale=options.scale,
        sync=options.sync,
        port=options.port,
        jobs=options.jobs,
        max_connections=options.max_connections,
    )
    return Pair.create(settings)


def _check_same(pair: Pair, options: argparse.Namespace) -> None:
    """A pair found in --data-dir is started as it was built; other seeding options are refused."""
    state = pair.state
    if options.databases not in (0, state.databases) or options.scale not in (1, state.scale):
        raise ServerError(
            f"{pair.data_dir} holds a pair of {state.databases} databases at scale {state.scale}; "
            "give a new --data-dir to build another"
        )
