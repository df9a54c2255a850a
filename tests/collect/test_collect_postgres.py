"""The PostgreSQL collector against a real server: the commits and rollbacks it reports for a
database are exactly those the test made there (counted by the test, not by caplab), the log it
reports covers at least the bytes the test wrote, and a node that goes away is skipped, not fatal."""

from __future__ import annotations

import secrets
import time

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from caplab.collect import PostgresCollector
from caplab.collect.base import ResourceSample

COMMITS, ROLLBACKS = 300, 50
WRITTEN_MB = 4.0


def url_for(url: str, dbname: str) -> str:
    return make_conninfo(url, dbname=dbname)


def totals(samples: list[ResourceSample], scope: str, metric: str, walls: dict[float, float]) -> float:
    """A rate summed back into a count: each sample's rate × the time it covered on the collector's
    own clock (its ``walls``, not the test's: under load the two differ by more than the tolerance)."""
    return sum(s.value * walls[s.t] for s in samples if s.scope == scope and s.metric == metric)


@pytest.mark.slow
def test_commits_rollbacks_and_log_are_the_servers_own_counts(postgres_url: str) -> None:
    name = f"collect_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    collector = PostgresCollector([url_for(postgres_url, "postgres")])
    samples: list[ResourceSample] = []
    walls: dict[float, float] = {}
    try:
        collector.start()
        with psycopg.connect(url_for(postgres_url, name)) as conn:
            conn.execute("CREATE TABLE filler (payload text)")
            conn.commit()
            for _ in range(COMMITS - 1):  # the CREATE TABLE was one
                conn.execute("SELECT 1")
                conn.commit()
            for _ in range(ROLLBACKS):
                conn.execute("SELECT 1")
                conn.rollback()
        with psycopg.connect(url_for(postgres_url, name), autocommit=True) as conn:
            conn.execute("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, %s)", [4000])
        # Backends report their counts as they end; poll, bounded, until both are in.
        for step in range(30):
            time.sleep(0.2)
            t = float(step)
            samples += collector.sample(t)
            walls[t] = collector.walls.get(collector.nodes[0], 0.0)
            scope = f"pgdb:{name}"
            if totals(samples, scope, "commits_s", walls) >= 0.98 * (COMMITS + 1):
                break
    finally:
        collector.stop()
    scope = f"pgdb:{name}"
    assert totals(samples, scope, "commits_s", walls) == pytest.approx(COMMITS + 1, rel=0.02)  # + the INSERT
    assert totals(samples, scope, "rollbacks_s", walls) == pytest.approx(ROLLBACKS, rel=0.02)
    node = f"pg:{collector.nodes[0]}"
    assert {s.value for s in samples if s.scope == node and s.metric == "primary"} == {1.0}
    wal_mb = totals(samples, node, "wal_mb_s", walls)
    assert wal_mb >= WRITTEN_MB, f"4,000 rows of 1,000 bytes make at least 4 MB of log, got {wal_mb:.2f}"
    assert "password" not in node and ":" in collector.nodes[0]


def test_a_node_that_cannot_be_reached_is_skipped(postgres_url: str, closed_port: int) -> None:
    gone = make_conninfo(postgres_url, port=str(closed_port))
    collector = PostgresCollector([url_for(postgres_url, "postgres"), gone])
    collector.start()
    try:
        scopes = {s.scope for s in collector.sample(1.0)}
    finally:
        collector.stop()
    assert scopes and all(s == f"pg:{collector.nodes[0]}" for s in scopes if s.startswith("pg:"))
