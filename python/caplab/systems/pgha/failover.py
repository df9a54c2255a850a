"""Role changes, each done the way an operator or a crash does it, never by caplab itself:

- ``kill_primary``: SIGKILL of the leader's Patroni and postmaster, nothing else. The replicas'
  Patroni notice the leader key expire, one takes it and promotes its PostgreSQL. The phases come
  from etcd and Patroni (see phases.py).
- ``switchover``: Patroni's ``POST /switchover``; the old leader's Patroni makes it a replica. Its
  phases run from the request (the leader stepping down stands where a dead leader's detection
  does).
- ``rejoin``: the killed node's Patroni is started again; it rewinds PostgreSQL (``use_pg_rewind``)
  onto the new timeline and streams from the new leader.
"""

from __future__ import annotations

import time
from typing import Any

from caplab.systems.pgha import phases
from caplab.systems.pgha.cluster import READY_TIMEOUT_S, Cluster
from caplab.systems.pgha.patroni import Node, RestAnswer
from caplab.systems.pgha.settings import HaError

MARGIN_S = 30.0
"""Time allowed beyond ttl + loop_wait + retry_timeout before a failover counts as stuck."""


def leader_and_timeline(cluster: Cluster) -> tuple[Node, int]:
    """The leader and its timeline; HaError unless every node is in the cluster."""
    view = cluster.members().cluster()
    members = view.get("members", [])
    leader = next((m for m in members if m.get("role") == "leader"), None)
    if leader is None or len(members) < len(cluster.nodes):
        seen = ", ".join(f"{m['name']} {m.get('role')}" for m in members) or "nothing answers"
        raise HaError(f"the cluster is not whole ({seen}); `rejoin` first?")
    return cluster.node(leader["name"]), int(leader.get("timeline", 0))


def kill_primary(cluster: Cluster, *, then_rejoin: bool = False) -> dict[str, Any]:
    """Kills the leader node; returns who took over and the phases (and, with ``then_rejoin``,
    how long until the old leader streamed again)."""
    old, timeline = leader_and_timeline(cluster)
    s = cluster.state
    bound = s.ttl + s.loop_wait + s.retry_timeout + MARGIN_S
    with phases.LeaderWatch(cluster.etcd, s.scope, old.name) as watch:
        patroni_pid, postmaster_pid, fault_at = old.kill()
        new = cluster.node(watch.wait_elected(bound))
    timeline_phases, new_timeline = phases.taken_over(
        watch, new, fault_at, timeline, bound, phases.set_by(s.ttl, s.loop_wait)
    )
    old.server.wait_gone()
    result: dict[str, Any] = {
        "action": "kill-primary",
        "old_primary": old.name,
        "new_primary": new.name,
        "killed": {"patroni": patroni_pid, "postmaster": postmaster_pid},
        "timeline": new_timeline,
        "phases": timeline_phases.as_dict(),
        "writable_after_s": round(timeline_phases.writable_at - fault_at, 3),
        "rejoined_after_s": None,
    }
    if then_rejoin:
        rejoin(cluster, old)
        result["rejoined_after_s"] = round(time.time() - fault_at, 3)
    return result


def switchover(cluster: Cluster, candidate: str | None = None) -> dict[str, Any]:
    """Patroni's switchover to ``candidate`` (by default any healthy replica), with its phases from
    the moment Patroni was asked — the fault, on the clients' clock: the wait for a healthy
    cluster before it is no part of the failover. Returns when the old leader streams from the new
    one again."""
    old, timeline = leader_and_timeline(cluster)
    cluster.members().wait_healthy(READY_TIMEOUT_S, sync=cluster.state.sync)
    body = {"leader": old.name, **({"candidate": candidate} if candidate else {})}
    with phases.LeaderWatch(cluster.etcd, cluster.state.scope, old.name) as watch:
        asked_at = time.time()
        answer = old.rest("/switchover", "POST", body, timeout_s=READY_TIMEOUT_S)
        if not switchover_under_way(answer):
            raise HaError(f"Patroni refused the switchover ({answer.status}): {answer.body}")
        new = cluster.node(watch.wait_elected(READY_TIMEOUT_S))
    timeline_phases, new_timeline = phases.taken_over(
        watch, new, asked_at, timeline, READY_TIMEOUT_S, phases.SWITCHOVER_SET_BY
    )
    cluster.members().wait_healthy(READY_TIMEOUT_S, sync=cluster.state.sync)
    return {
        "action": "switchover",
        "old_primary": old.name,
        "new_primary": new.name,
        "patroni": answer.body,
        "timeline": new_timeline,
        "phases": timeline_phases.as_dict(),
        "writable_after_s": round(timeline_phases.writable_at - asked_at, 3),
        "rejoined_after_s": round(time.time() - asked_at, 3),
    }


def switchover_under_way(answer: RestAnswer) -> bool:
    """Whether Patroni took the switchover: done (200), or still going when its API stopped
    waiting. ``POST /switchover`` polls for a new leader for 2 × max(10 s, loop_wait), then answers
    503 "Switchover status unknown" while the old leader may still be stopping (a shutdown
    checkpoint of 200 databases took longer); the leader watch then goes on waiting. "Switchover
    failed" (the request withdrawn, no new leader) and any other answer are a refusal."""
    if answer.status == 200:
        return True
    return answer.status == 503 and str(answer.body).endswith("status unknown")


def rejoin(cluster: Cluster, node: Node | None = None) -> float:
    """Starts the Patroni of ``node`` (by default every node whose Patroni is not running) and
    waits until the cluster is whole; returns the seconds it took."""
    started = time.monotonic()
    targets = [node] if node is not None else [n for n in cluster.nodes if n.patroni_pid() is None]
    for target in targets:
        if target.patroni_pid() is None:
            target.server.kill()
            target.server.wait_gone()
            target.start(cluster.env())
    cluster.members().wait_healthy(READY_TIMEOUT_S, sync=cluster.state.sync)
    return time.monotonic() - started
