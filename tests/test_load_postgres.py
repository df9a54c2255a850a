"""`caplab load postgresql://…` against a real PostgreSQL: pgbench's own tables and transactions,
every completed transaction checked against the rows the database holds afterwards, pgbench
itself run beside caplab on the same data, and the failures a user meets said in one line."""

from __future__ import annotations

import glob
import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from caplab.engine import ClosedLoad, Plan, RequestClass, Target, run
from support.require import PG, require

pytestmark = pytest.mark.slow  # pgbench -i and a few seconds of load per test


def pgbench_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    require(PG, [] if found else ["pgbench is not installed (postgresql-contrib)"])
    return found[-1]


@pytest.fixture(scope="module")
def bench_url(postgres_url: str) -> Iterator[str]:
    """A database of its own, loaded by `pgbench -i -s 1` (100,000 accounts)."""
    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = make_conninfo(postgres_url, dbname=name)
    pgbench("-i", "-s", "1", "-q", url=url)
    yield url_form(url)


def url_form(conninfo: str) -> str:
    d = conninfo_to_dict(conninfo)
    return f"postgresql://{d['user']}:{d['password']}@{d['host']}:{d['port']}/{d['dbname']}"


def pgbench(*args: str, url: str) -> str:
    d = conninfo_to_dict(url)
    env = dict(os.environ, PGPASSWORD=str(d["password"]))
    where = ["-h", str(d["host"]), "-p", str(d["port"]), "-U", str(d["user"]), str(d["dbname"])]
    done = subprocess.run([pgbench_bin(), *args, *where], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def count(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def caplab_load(caplab_cmd: list[str], url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*caplab_cmd, "load", url, *args], capture_output=True, text=True, timeout=120)


def result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_every_tpcb_transaction_caplab_completed_is_in_the_database(
    caplab_cmd: list[str], bench_url: str
) -> None:
    before = count(bench_url, "SELECT count(*) FROM pgbench_history")
    r = result(caplab_load(caplab_cmd, bench_url, "--workload", "tpcb", "--users", "4", "-d", "2s", "--json"))
    added = count(bench_url, "SELECT count(*) FROM pgbench_history") - before
    # Warm-up is none and the run drains: each completed transaction inserted one history row.
    assert r["errors"] == 0 and r["completed"] > 100
    assert added == r["completed"] + r["errors"] == r["sent"]
    assert r["classes"][0]["name"] == "tpcb"
    assert ":" not in r["target"].split("@")[0].removeprefix("postgresql://"), "no password in the target"


def test_the_open_model_runs_transactions_on_schedule(caplab_cmd: list[str], bench_url: str) -> None:
    r = result(
        caplab_load(caplab_cmd, bench_url, "--workload", "select-only", "--rate", "400", "-d", "2s", "--json")
    )
    assert r["completed"] == pytest.approx(800, abs=8) and r["errors"] == 0


def test_a_ledger_script_writes_one_row_per_acknowledged_transaction(
    caplab_cmd: list[str], bench_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(bench_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS ledger (seq bigint PRIMARY KEY, at timestamptz DEFAULT now())"
        )
    script = tmp_path / "ledger.sql"
    script.write_text(
        "-- one row per transaction, keyed by caplab's sequence number\n"
        "INSERT INTO ledger (seq) VALUES (:seq);\n"
    )
    r = result(
        caplab_load(caplab_cmd, bench_url, "--sql-file", str(script), "--users", "3", "-d", "1s", "--json")
    )
    rows = count(bench_url, "SELECT count(DISTINCT seq) FROM ledger")
    assert rows == r["completed"] > 50 and r["errors"] == 0, (
        "distinct keys: :seq is unique across connections"
    )


def test_caplab_and_pgbench_measure_the_same_select_only_server_alike(
    caplab_cmd: list[str], bench_url: str
) -> None:
    """Same data, same clients, one after the other: caplab pipelines each transaction in one
    round trip, pgbench -M prepared sends one statement at a time; for select-only (one
    statement) the two must be within a factor of 3 of each other."""
    r = result(
        caplab_load(caplab_cmd, bench_url, "--workload", "select-only", "--users", "4", "-d", "2s", "--json")
    )
    out = pgbench("-S", "-M", "prepared", "-c", "4", "-T", "2", url=make_conninfo(bench_url))
    tps = float(next(line for line in out.splitlines() if line.startswith("tps")).split("=")[1].split()[0])
    assert 1 / 3 < r["throughput"] / tps < 3, (r["throughput"], tps)


def xact_commit(url: str) -> int:
    """The server's committed transactions in the URL's database so far (pg_stat_database)."""
    return count(url, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")


def test_caplab_runs_tpcb_at_least_nine_tenths_as_fast_as_pgbench_and_the_server_counts_its_commits(
    caplab_cmd: list[str], bench_url: str
) -> None:
    """The issue's check against pgbench: tpcb from 8 closed users on the same data for 5 s each,
    pgbench -M prepared first, then caplab. caplab's TPS must be at least 0.9 × pgbench's, and
    the server's xact_commit delta over caplab's run must equal caplab's committed count within
    1 % (the extra commits are each connection's statement preparations and the two readings)."""
    out = pgbench("-c", "8", "-j", "2", "-T", "5", "-M", "prepared", url=make_conninfo(bench_url))
    tps = float(next(line for line in out.splitlines() if line.startswith("tps")).split("=")[1].split()[0])
    before = xact_commit(bench_url)
    r = result(caplab_load(caplab_cmd, bench_url, "--workload", "tpcb", "--users", "8", "-d", "5s", "--json"))
    # A backend's counts reach pg_stat_database when it exits; caplab's have all exited by now.
    committed = xact_commit(bench_url) - before
    assert r["errors"] == 0 and r["completed"] > 500, r
    assert r["throughput"] >= 0.9 * tps, (r["throughput"], tps)
    assert abs(committed - r["completed"]) <= 0.01 * r["completed"], (committed, r["completed"])


def test_a_refused_password_is_one_line_and_never_printed(caplab_cmd: list[str], bench_url: str) -> None:
    d = conninfo_to_dict(make_conninfo(bench_url))
    wrong = f"postgresql://{d['user']}:not-{d['password']}@{d['host']}:{d['port']}/{d['dbname']}"
    done = caplab_load(caplab_cmd, wrong, "--users", "1", "-d", "1s")
    assert done.returncode == 1
    assert "password authentication failed" in done.stderr, done.stderr
    assert str(d["password"]) not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_database_without_pgbench_tables_says_how_to_load_them(
    caplab_cmd: list[str], postgres_url: str
) -> None:
    done = caplab_load(caplab_cmd, url_form(postgres_url), "--workload", "tpcb", "--users", "1", "-d", "1s")
    assert done.returncode == 1 and "pgbench -i -s SCALE" in done.stderr, done.stderr


def test_a_bad_script_names_its_line(caplab_cmd: list[str], bench_url: str, tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("\\sleep 10ms\nSELECT 1;\n")
    done = caplab_load(caplab_cmd, bench_url, "--sql-file", str(script), "--users", "1", "-d", "1s")
    assert done.returncode == 2 and "line 1" in done.stderr and "\\set" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def three_databases(postgres_url: str) -> Iterator[list[str]]:
    """Three databases of their own (``ag_…_0`` … ``_2``), each with an empty ``hits`` table."""
    stem = f"ag_{secrets.token_hex(3)}"
    urls = []
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for i in range(3):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(f"{stem}_{i}")))
    for i in range(3):
        url = url_form(make_conninfo(postgres_url, dbname=f"{stem}_{i}"))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE hits (seq bigint PRIMARY KEY)")
        urls.append(url)
    yield urls


def engine_target(url: str) -> Target:
    """The engine's form of a target: the URL without its password, the password apart."""
    d = conninfo_to_dict(url)
    return Target(
        f"postgresql://{d['user']}@{d['host']}:{d['port']}/{d['dbname']}", password=str(d["password"])
    )


def test_users_spread_over_three_databases_are_counted_per_database(three_databases: list[str]) -> None:
    targets = [engine_target(url) for url in three_databases]
    before = [count(url, "SELECT count(*) FROM hits") for url in three_databases]
    plan = Plan(
        target=targets[0],
        extra_targets=tuple(targets[1:]),
        load=ClosedLoad(6),
        duration_s=1.0,
        interval_s=0.25,
        threads=2,
        requests=(RequestClass(name="hit", body="INSERT INTO hits (seq) VALUES (:seq);\n"),),
    )
    r = run(plan)
    rows = [
        count(url, "SELECT count(*) FROM hits") - b for url, b in zip(three_databases, before, strict=True)
    ]
    # Two users per database; each completed transaction is one row in its own database.
    assert r.errors == 0 and r.in_flight_at_end == 0 and min(rows) > 20, (rows, r.errors_by_kind)
    assert [t.completed for t in r.per_target] == rows and sum(rows) == r.completed
    assert [t.label for t in r.per_target] == [t.url for t in targets], "labels hold no password"
    for series in r.per_target:
        assert [(i.start_s, i.end_s) for i in series.intervals] == [(i.start_s, i.end_s) for i in r.intervals]
        assert sum(i.completed for i in series.intervals) == series.completed


def test_a_missing_table_is_counted_as_sql_42_with_the_servers_words(
    caplab_cmd: list[str], bench_url: str, tmp_path: Path
) -> None:
    script = tmp_path / "missing.sql"
    script.write_text("SELECT count(*) FROM no_such_table;\n")
    args = ("--sql-file", str(script), "--users", "2", "-d", "1s")
    r = result(caplab_load(caplab_cmd, bench_url, *args, "--json"))
    # The run goes on: every transaction failed, each counted under the SQLSTATE class 42.
    assert r["sent"] > 20 and r["errors"] == r["sent"] and r["errors_by_kind"] == {"sql:42": r["sent"]}
    words = 'relation "no_such_table" does not exist (SQLSTATE 42P01)'
    assert r["error_samples"] == {"sql:42": words}
    shown = caplab_load(caplab_cmd, bench_url, *args)
    assert shown.returncode == 0 and words in shown.stdout, shown.stdout
