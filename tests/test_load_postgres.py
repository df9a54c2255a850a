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

pytestmark = pytest.mark.slow  # pgbench -i and a few seconds of load per test


def pgbench_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        pytest.skip("pgbench is not installed (postgresql-contrib)")
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
