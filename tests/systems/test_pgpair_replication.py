"""pgpair against real PostgreSQL servers: the standby follows the primary, a synchronous pair loses
no committed row when its primary is killed, and a switchover leaves a working pair with the roles
swapped. Rows are counted on the servers themselves, never inferred."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from caplab.collect import PostgresCollector
from caplab.collect.base import ResourceSample
from caplab.systems.pgpair import Pair, Server, failover
from caplab.systems.pgpair.nodes import connect

StartPair = Callable[..., Pair]
pytestmark = pytest.mark.slow  # real servers seeded and driven end to end

WAIT_S = 30.0


def sql(pair: Pair, node: Server, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with connect(node, pair.state.superuser, pair.password) as conn:
        cur = conn.execute(query, params or None)
        return cur.fetchall() if cur.description else []


def count_on(pair: Pair, node: Server) -> int:
    return int(sql(pair, node, "SELECT count(*) FROM ledger")[0][0])


def wait_count(pair: Pair, node: Server, expected: int) -> int:
    """Polls ``node`` (bounded) until it holds ``expected`` ledger rows; returns what it holds."""
    deadline = time.monotonic() + WAIT_S
    while (seen := count_on(pair, node)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return seen


def write_rows(pair: Pair, node: Server, first: int, count: int) -> None:
    """``count`` rows, each its own committed (acknowledged) transaction."""
    with connect(node, pair.state.superuser, pair.password) as conn:
        for i in range(first, first + count):
            conn.execute("INSERT INTO ledger VALUES (%s)", (i,))


def roles(pair: Pair) -> tuple[Server, Server]:
    primary, standby = pair.primary(), pair.standby()
    assert primary is not None and standby is not None, pair.roles()
    return primary, standby


def test_a_row_committed_on_the_primary_is_read_on_the_standby(start_pair: StartPair) -> None:
    pair = start_pair(sync="off")
    primary, standby = roles(pair)
    assert (primary.name, standby.name) == ("node0", "node1")
    sql(pair, primary, "CREATE TABLE ledger (id int PRIMARY KEY)")
    write_rows(pair, primary, 0, 10)
    assert wait_count(pair, standby, 10) == 10
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        write_rows(pair, standby, 10, 1)
    status = pair.status()
    assert status["primary"] == "node0"
    assert [r["state"] for r in status["replication"]] == ["streaming"]
    pids = pair.role_pids()
    assert pids["primary"][0] == primary.postmaster_pid() and len(pids["primary"]) > 1
    assert pids["standby"][0] == standby.postmaster_pid() and len(pids["standby"]) > 1


def test_remote_apply_makes_a_commit_visible_on_the_standby_when_it_returns(start_pair: StartPair) -> None:
    pair = start_pair(sync="remote_apply")
    primary, standby = roles(pair)
    assert [r["sync_state"] for r in pair.status()["replication"]] == ["sync"]
    sql(pair, primary, "CREATE TABLE ledger (id int PRIMARY KEY)")
    for i in range(20):
        write_rows(pair, primary, i, 1)
        assert count_on(pair, standby) == i + 1  # no polling: applied before the commit returned


def test_with_synchronous_replication_a_killed_primary_loses_no_committed_row(start_pair: StartPair) -> None:
    pair = start_pair(sync="on")
    old, new = roles(pair)
    sql(pair, old, "CREATE TABLE ledger (id int PRIMARY KEY)")
    write_rows(pair, old, 0, 300)
    change = failover.kill_primary(pair, detect_delay_s=0.2)
    assert (change.old_primary, change.new_primary) == (old.name, new.name)
    assert change.killed_pid is not None and old.postmaster_pid() is None
    assert pair.roles() == {old.name: "down", new.name: "primary"}
    assert count_on(pair, new) == 300
    write_rows(pair, new, 300, 5)  # writable, and no commit waits for the missing standby

    failover.rejoin(pair)  # pg_rewind the killed node; it streams from the new primary
    assert pair.roles() == {old.name: "standby", new.name: "primary"}
    assert [r["sync_state"] for r in pair.status()["replication"]] == ["sync"]
    write_rows(pair, new, 305, 5)
    assert wait_count(pair, old, 310) == 310


def test_switchover_swaps_the_roles_and_replication_flows_again(start_pair: StartPair) -> None:
    pair = start_pair(sync="on")
    old, new = roles(pair)
    sql(pair, old, "CREATE TABLE ledger (id int PRIMARY KEY)")
    write_rows(pair, old, 0, 50)
    change = failover.switchover(pair)
    assert (change.old_primary, change.new_primary) == (old.name, new.name)
    assert change.paired_after_s is not None and change.paired_after_s >= change.writable_after_s
    assert pair.roles() == {old.name: "standby", new.name: "primary"}
    assert count_on(pair, new) == 50
    write_rows(pair, new, 50, 10)
    assert wait_count(pair, old, 60) == 60
    assert [(r["standby"], r["sync_state"]) for r in pair.status()["replication"]] == [(old.name, "sync")]

    failover.switchover(pair)  # and back: the pair is as it was built
    assert pair.roles() == {old.name: "primary", new.name: "standby"}
    write_rows(pair, old, 60, 1)
    assert wait_count(pair, new, 61) == 61


def test_a_pair_stopped_after_kill_primary_resumes_with_the_promoted_node_as_primary(
    start_pair: StartPair,
) -> None:
    """Neither data directory says "standby" then; resuming both as primaries would split the pair."""
    pair = start_pair(sync="off")
    old, new = roles(pair)
    sql(pair, old, "CREATE TABLE ledger (id int PRIMARY KEY)")
    write_rows(pair, old, 0, 10)
    assert wait_count(pair, new, 10) == 10
    failover.kill_primary(pair, detect_delay_s=0)
    write_rows(pair, new, 10, 5)
    pair.stop()
    assert pair.roles() == {old.name: "down", new.name: "down"}

    pair.resume()
    assert pair.roles() == {old.name: "standby", new.name: "primary"}
    assert wait_count(pair, old, 15) == 15


def test_the_postgres_collector_follows_the_roles_and_the_standbys_replay(start_pair: StartPair) -> None:
    """caplab's PostgreSQL collector on both nodes of a pair: which is primary, the log the standby
    replays (its redo rate), and after a switchover the same nodes with their roles swapped."""
    pair = start_pair(sync="on")
    primary, standby = roles(pair)
    urls = [
        f"postgresql://{pair.state.superuser}:{pair.password}@127.0.0.1:{n.port}/postgres" for n in pair.nodes
    ]
    collector = PostgresCollector(urls)
    collector.start()
    try:
        sql(pair, primary, "CREATE TABLE ledger (id int PRIMARY KEY, pad text)")
        sql(pair, primary, "INSERT INTO ledger SELECT i, repeat('x', 500) FROM generate_series(1, 4000) i")
        assert wait_count(pair, standby, 4000) == 4000
        before = collector.sample(1.0)
        failover.switchover(pair)
        collector.sample(2.0)  # the role change: rates start again from here
        after = collector.sample(3.0)
    finally:
        collector.stop()

    def value(samples: list[ResourceSample], node: Server, metric: str) -> float | None:
        scope = f"pg:127.0.0.1:{node.port}"
        return next((s.value for s in samples if s.scope == scope and s.metric == metric), None)

    assert (value(before, primary, "primary"), value(before, standby, "primary")) == (1.0, 0.0)
    replayed = value(before, standby, "replay_mb_s")
    assert replayed is not None and replayed > 0, "4,000 rows of 500 bytes replayed on the standby"
    assert value(before, primary, "replay_lag_mb") is not None, "the primary reports its standby's lag"
    # …and, the 4,000 rows just replicated, its lag in time at each step: written, flushed, replayed
    lags = {m: value(before, primary, m) for m in ("write_lag_ms", "flush_lag_ms", "replay_lag_ms")}
    assert all(v is not None and 0 <= v < WAIT_S * 1000 for v in lags.values()), lags
    assert value(before, standby, "flush_lag_ms") is None, "a standby feeds no standby here"
    assert (value(after, primary, "primary"), value(after, standby, "primary")) == (0.0, 1.0)
    assert not any(pair.password in s.scope for s in before + after)
