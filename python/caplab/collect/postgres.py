"""PostgreSQL as the server counts it, on the load's clock: what the availability-group paper
tables beside TPS — commits per database, the log generated, how far the standby is behind and how
fast it replays — read from each node of a primary/standby set (``pg_stat_database``,
``pg_current_wal_lsn``, ``pg_stat_replication``, ``pg_last_wal_replay_lsn``).

Scopes: ``pg:NODE`` (``host:port``) with ``primary`` (1 or 0), ``connections``, ``commits_s``,
``rollbacks_s``, ``checkpoints_s``; on a primary ``wal_mb_s`` (log generated: the insert position,
since with asynchronous commit the written one lags behind it) and, per standby it
feeds, the largest ``send_lag_mb`` (written but not yet sent), ``replay_lag_mb`` (not yet replayed)
and the standby's lag in time at each step of a commit, ``write_lag_ms`` (received and written),
``flush_lag_ms`` (flushed to its disk: what a synchronous commit waits for) and ``replay_lag_ms``
(visible to its readers), PostgreSQL's own ``pg_stat_replication`` figures, which it keeps for a
while after the standby has caught up and then clears (none is reported then); on a standby
``replay_mb_s`` (log replayed: the redo rate) and ``receive_lag_mb``. ``pgdb:NAME`` has
``commits_s`` and ``rollbacks_s`` summed over the nodes, for each database that did any in the
interval (hundreds of idle ones would only bloat the samples).

A node that cannot be reached is skipped for that sample and retried at the next: a failover is
exactly when one goes away, and the figures of the other are what the study wants then. Commits are
counted by the server when a backend reports them (PostgreSQL flushes a busy backend's counts at
most once a second), so per-interval rates are smoothed at that scale; totals over a trial are exact.
The collector's own queries are transactions of the database its URL names: point it at one the
load does not use (``postgres``), as pgbench's own monitoring would.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from caplab.collect.base import ResourceSample

__all__ = ["PostgresCollector"]

MB = 1_000_000
CONNECT_TIMEOUT_S = 2

NODE_SQL = """
SELECT pg_is_in_recovery(),
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
       (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter),
       CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') END,
       CASE WHEN pg_is_in_recovery() THEN pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0') END,
       CASE WHEN pg_is_in_recovery()
            THEN pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) END
"""
REPLICATION_SQL = """
SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn)),
       max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)),
       max(extract(epoch FROM replay_lag) * 1000),
       max(extract(epoch FROM write_lag) * 1000),
       max(extract(epoch FROM flush_lag) * 1000)
FROM pg_stat_replication
"""
DATABASE_SQL = "SELECT datname, xact_commit, xact_rollback FROM pg_stat_database WHERE datname IS NOT NULL"


@dataclass
class _Reading:
    at: float
    primary: bool
    connections: float
    checkpoints: float
    wal_bytes: float | None
    replayed_bytes: float | None
    receive_lag_bytes: float | None
    replication: tuple[float | None, ...]
    """send and replay lag (bytes), replay, write and flush lag (ms)."""
    databases: dict[str, tuple[float, float]] = field(default_factory=dict)


def node_name(url: str) -> str:
    """``host:port`` of a connection URL: what the scope is called (never the password)."""
    parts = conninfo_to_dict(url)
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}"


def _node_state(t: float, scope: str, now: _Reading) -> list[ResourceSample]:
    """What one reading says on its own: the node's role, its connections and its replication lag
    (a lag the server does not report is left out, not written as zero)."""
    out = [
        ResourceSample(t, scope, "primary", 1.0 if now.primary else 0.0),
        ResourceSample(t, scope, "connections", now.connections),
    ]
    send, replay, replay_ms, write_ms, flush_ms = now.replication
    for metric, value in (
        ("send_lag_mb", send / MB if send is not None else None),
        ("replay_lag_mb", replay / MB if replay is not None else None),
        ("write_lag_ms", write_ms),
        ("flush_lag_ms", flush_ms),
        ("replay_lag_ms", replay_ms),
        ("receive_lag_mb", now.receive_lag_bytes / MB if now.receive_lag_bytes is not None else None),
    ):
        if value is not None:
            out.append(ResourceSample(t, scope, metric, value))
    return out


def _node_rates(
    t: float, scope: str, before: _Reading, now: _Reading, wall: float, per_db: dict[str, list[float]]
) -> list[ResourceSample]:
    """The node's rates between two readings of the same role; each database's commits and
    rollbacks are also added into ``per_db`` (``[commits, rollbacks, wall]``), summed over nodes."""
    commits = rollbacks = 0.0
    for db, (c, r) in now.databases.items():
        c0, r0 = before.databases.get(db, (c, r))
        dc, dr = max(0.0, c - c0), max(0.0, r - r0)
        commits, rollbacks = commits + dc, rollbacks + dr
        if dc or dr:
            sums = per_db.setdefault(db, [0.0, 0.0, wall])
            sums[0] += dc
            sums[1] += dr
    out = [
        ResourceSample(t, scope, "commits_s", commits / wall),
        ResourceSample(t, scope, "rollbacks_s", rollbacks / wall),
        ResourceSample(t, scope, "checkpoints_s", max(0.0, now.checkpoints - before.checkpoints) / wall),
    ]
    for metric, a, b in (
        ("wal_mb_s", now.wal_bytes, before.wal_bytes),
        ("replay_mb_s", now.replayed_bytes, before.replayed_bytes),
    ):
        if a is not None and b is not None:
            out.append(ResourceSample(t, scope, metric, max(0.0, a - b) / MB / wall))
    return out


class PostgresCollector:
    """Samples each node of a PostgreSQL set (one URL per node; a URL's database is where the
    collector connects, any database of the cluster will do)."""

    name = "postgres"

    def __init__(self, urls: list[str]) -> None:
        self.urls = list(urls)
        self.nodes = [node_name(u) for u in self.urls]
        self._conns: dict[str, psycopg.Connection[Any] | None] = {}
        self._prev: dict[str, _Reading] = {}
        self.walls: dict[str, float] = {}
        """Per node, the seconds its last rates cover, on the collector's own clock (the instants it
        read the server's counters), whatever time the caller gives a sample."""

    def start(self) -> None:
        self._prev = {}
        for node, url in zip(self.nodes, self.urls, strict=True):
            reading = self._read(node, url)
            if reading is not None:
                self._prev[node] = reading

    def sample(self, t: float) -> list[ResourceSample]:
        out: list[ResourceSample] = []
        per_db: dict[str, list[float]] = {}
        for node, url in zip(self.nodes, self.urls, strict=True):
            now = self._read(node, url)
            if now is None:
                self._prev.pop(node, None)  # gone: its next reading starts a new baseline
                continue
            before = self._prev.get(node)
            self._prev[node] = now
            scope = f"pg:{node}"
            out += _node_state(t, scope, now)
            if before is None or before.primary != now.primary or now.at <= before.at:
                continue  # a role change resets what the rates are of
            wall = self.walls[node] = now.at - before.at
            out += _node_rates(t, scope, before, now, wall, per_db)
        for db, (dc, dr, wall) in per_db.items():
            out += [
                ResourceSample(t, f"pgdb:{db}", "commits_s", dc / wall),
                ResourceSample(t, f"pgdb:{db}", "rollbacks_s", dr / wall),
            ]
        return out

    def stop(self) -> None:
        for conn in self._conns.values():
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    conn.close()
        self._conns = {}
        self._prev = {}

    def _read(self, node: str, url: str) -> _Reading | None:
        conn = self._conns.get(node)
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
                self._conns[node] = conn
            recovering, connections, checkpoints, wal, replayed, receive_lag = _one(conn, NODE_SQL)
            replication = (None,) * 5 if recovering else _one(conn, REPLICATION_SQL)
            rows = conn.execute(DATABASE_SQL).fetchall()
        except psycopg.Error:
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    conn.close()
            self._conns[node] = None
            return None
        return _Reading(
            at=time.monotonic(),
            primary=not recovering,
            connections=float(connections),
            checkpoints=float(checkpoints),
            wal_bytes=_float(wal),
            replayed_bytes=_float(replayed),
            receive_lag_bytes=_float(receive_lag),
            replication=tuple(_float(v) for v in replication),
            databases={str(name): (float(c), float(r)) for name, c, r in rows},
        )


def _one(conn: psycopg.Connection[Any], sql: str) -> tuple[Any, ...]:
    row = conn.execute(sql).fetchone()
    assert row is not None  # an aggregate query always returns its one row
    return tuple(row)


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None
