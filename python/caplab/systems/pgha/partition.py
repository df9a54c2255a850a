"""A partition of the leader, measured from both sides.

``isolate`` cuts the leader's link (its namespace drops every packet, see netns.py) for a while,
then heals it. Meanwhile:

- on the **isolated side**, a writer on the leader's Unix socket (a client that shares the leader's
  side of the partition) inserts a numbered row every 20 ms and notes each acknowledgement, and a
  prober asks the server every 50 ms whether it still takes writes. Patroni promises that a
  leader which cannot renew its key demotes itself before the key expires (ttl), so no write is
  acknowledged there once another node may lead;
- on the **majority side**, the leader key's expiry, the election, the promotion and the new
  leader taking writes, as for a killed primary (phases.py).

After healing, the old leader's Patroni finds the new leader, rewinds and follows it. Then every
row the isolated side had acknowledged is looked for on the new leader: one missing was
acknowledged and lost (under synchronous mode none may be; asynchronously the rows acknowledged
before the demotion are rewound away).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import psycopg

from caplab.systems.pgha import phases
from caplab.systems.pgha.cluster import READY_TIMEOUT_S, Cluster
from caplab.systems.pgha.failover import MARGIN_S, leader_and_timeline
from caplab.systems.pgha.patroni import SUPERUSER, Node
from caplab.systems.pgha.settings import HaError

TABLE = "caplab_partition"
"""The isolated side's ledger, in the ``postgres`` database: one row per write."""
WRITE_EVERY_S = 0.02
PROBE_EVERY_S = 0.05
FIRST_WRITES = 5
"""Writes acknowledged before the cut: the writer is known to work."""


class SideWriter:
    """Writes numbered rows through ``node``'s Unix socket from a thread, noting each row
    acknowledged and when; a second thread notes when the server was first demoted (in recovery,
    or gone)."""

    def __init__(self, node: Node, password: str, first_id: int) -> None:
        self.conninfo = psycopg.conninfo.make_conninfo(
            host=str(node.socket_dir),
            port=node.port,
            user=SUPERUSER,
            password=password,
            dbname="postgres",
            connect_timeout=1,
        )
        self.acked: list[tuple[int, float]] = []
        self.demoted_at: float | None = None
        self.cut_at = float("inf")
        """The prober notes a demotion only from here on (set just before the cut)."""
        self._next = first_id
        self._done = threading.Event()
        # daemon threads: a commit waiting for a standby that cannot answer never returns
        self._threads = [
            threading.Thread(target=self._write, name="pgha-side-writer", daemon=True),
            threading.Thread(target=self._probe, name="pgha-side-prober", daemon=True),
        ]

    def __enter__(self) -> SideWriter:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        for thread in self._threads:
            thread.join(1.0)

    def wait_acked(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < count:
            if time.monotonic() > deadline:
                raise HaError(f"the leader's own writer had {len(self.acked)} of {count} writes acknowledged")
            time.sleep(WRITE_EVERY_S)

    def _write(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._done.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self.conninfo, autocommit=True)
                conn.execute(f"INSERT INTO {TABLE} VALUES (%s, now())", (self._next,))
                self.acked.append((self._next, time.time()))
            except psycopg.Error:
                with contextlib.suppress(psycopg.Error):
                    if conn is not None:
                        conn.close()
                conn = None
            self._next += 1
            self._done.wait(WRITE_EVERY_S)
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _probe(self) -> None:
        while not self._done.is_set() and self.demoted_at is None:
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                taking_writes = row is not None and not row[0]
            except psycopg.Error:
                taking_writes = False
            now = time.time()
            if not taking_writes and now >= self.cut_at:
                self.demoted_at = now
            self._done.wait(PROBE_EVERY_S)


def _leader_connection(cluster: Cluster) -> psycopg.Connection[Any]:
    return psycopg.connect(cluster.url(), password=cluster.password, autocommit=True, connect_timeout=5)


def _prepare_ledger(cluster: Cluster) -> int:
    """Creates the ledger on the leader (once) and returns the first free row number."""
    with _leader_connection(cluster) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigint PRIMARY KEY, at timestamptz)")
        row = conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {TABLE}").fetchone()
    return int(row[0]) if row else 1


def _held(cluster: Cluster, ids: list[int]) -> set[int]:
    with _leader_connection(cluster) as conn:
        rows = conn.execute(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)", (ids,)).fetchall()
    return {int(r[0]) for r in rows}


def isolate(cluster: Cluster, seconds: float) -> dict[str, Any]:
    """Cuts the leader off for ``seconds`` from the cut, heals, waits until the cluster is whole
    again, and returns both sides' record (see the module's docstring)."""
    if not cluster.nets:
        raise HaError("isolate needs the nodes in namespaces of their own: start the cluster with --netns")
    old, timeline = leader_and_timeline(cluster)
    assert old.net is not None
    s = cluster.state
    bound = s.ttl + s.loop_wait + s.retry_timeout + MARGIN_S
    if seconds < s.ttl + s.loop_wait:
        raise HaError(f"--seconds {seconds:g} is shorter than ttl + loop_wait: nobody would take over")
    cluster.members().wait_healthy(READY_TIMEOUT_S, sync=s.sync)
    with SideWriter(old, cluster.password, _prepare_ledger(cluster)) as side:
        side.wait_acked(FIRST_WRITES, 10.0)
        try:
            with phases.LeaderWatch(cluster.etcd, s.scope, old.name) as watch:
                fault_at = side.cut_at = time.time()
                old.net.isolate()
                new = cluster.node(watch.wait_elected(bound))
            timeline_phases, new_timeline = phases.taken_over(
                watch, new, fault_at, timeline, bound, phases.set_by(s.ttl, s.loop_wait)
            )
            time.sleep(max(0.0, fault_at + seconds - time.time()))
        finally:
            old.net.heal()
        healed_at = time.time()
    cluster.members().wait_healthy(READY_TIMEOUT_S, sync=s.sync)
    rejoined_at = time.time()
    elected_at = timeline_phases.elected_at
    acked = side.acked
    lost = len(acked) - len(_held(cluster, [i for i, _ in acked]))
    after_fault = [t for _, t in acked if t > fault_at]
    while_another_led = sum(1 for t in after_fault if t >= elected_at)
    demoted_after = round(side.demoted_at - fault_at, 3) if side.demoted_at is not None else None
    return {
        "action": "isolate",
        "old_primary": old.name,
        "new_primary": new.name,
        "timeline": new_timeline,
        "phases": timeline_phases.as_dict(),
        "writable_after_s": round(timeline_phases.writable_at - fault_at, 3),
        "isolated_side": {
            "acknowledged": len(acked),
            "acknowledged_after_fault": len(after_fault),
            "last_acknowledged_after_s": round(max(after_fault) - fault_at, 3) if after_fault else None,
            "demoted_after_s": demoted_after,
            "acknowledged_while_another_led": while_another_led,
            "lost": lost,
            "promise": f"an isolated leader stops taking writes before its key expires (ttl {s.ttl} s)",
            "kept": while_another_led == 0 and demoted_after is not None and demoted_after <= s.ttl,
        },
        # the figures a study keeps (an action's top-level numbers)
        "isolated_lost": lost,
        "split_brain_writes": while_another_led,
        **({"isolated_demoted_after_s": demoted_after} if demoted_after is not None else {}),
        "healed_after_s": round(healed_at - fault_at, 3),
        "rejoined_after_s": round(rejoined_at - fault_at, 3),
    }
