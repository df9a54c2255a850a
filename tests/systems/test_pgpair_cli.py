"""pgpair as a user meets it: seeded databases, the command line (foreground start, status, a
role change, stop), and a wrong password refused in one clear line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from caplab.systems.pgpair import Pair, PasswordRefused, seed
from caplab.systems.pgpair.nodes import connect
from support.foreground import read_started

StartPair = Callable[..., Pair]
pytestmark = pytest.mark.slow  # real servers seeded and driven end to end

MODULE = [sys.executable, "-m", "caplab.systems.pgpair"]


def pgpair(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MODULE, *args], capture_output=True, text=True, timeout=300, check=False, env=env)


def test_each_seeded_database_holds_pgbench_tables_on_both_nodes(start_pair: StartPair) -> None:
    pair = start_pair(databases=20, scale=1, jobs=4)
    assert pair.database_names() == [f"ag_{i}" for i in range(20)]
    query = "SELECT (SELECT count(*) FROM pgbench_branches), (SELECT count(*) FROM pgbench_accounts)"
    for node in pair.nodes:  # the standby got them from the base backup
        for name in pair.database_names():
            with connect(node, pair.state.superuser, pair.password, dbname=name) as conn:
                assert conn.execute(query).fetchone() == (1, 100_000), (node.name, name)


def test_seeding_copes_with_a_client_in_the_first_database_as_soon_as_it_exists(
    start_pair: StartPair,
) -> None:
    """A client may connect to ``ag_0`` the moment it exists (the failover observer did, while its
    study's pair was seeding): the copies must not come from a database anyone can be in. A copy of
    a database with another session in it fails ("source database is being accessed by other
    users"), so seeding ``ag_0`` and copying it failed here; a template of its own, dropped after,
    does not."""
    pair = start_pair()
    primary = pair.primary()
    assert primary is not None
    held: list[psycopg.Connection[Any]] = []
    done = threading.Event()

    def hold_the_first_database() -> None:
        while not done.is_set() and not held:
            try:
                held.append(connect(primary, pair.state.superuser, pair.password, dbname="ag_0"))
            except psycopg.OperationalError:
                time.sleep(0.01)  # not there yet

    client = threading.Thread(target=hold_the_first_database)
    client.start()
    try:
        seed.seed(primary, pair.state.superuser, pair.passfile, 5, 1, jobs=2)
    finally:
        done.set()
        client.join()
        for conn in held:
            conn.close()
    assert held, "the client reached ag_0 while the others were copied"
    with connect(primary, pair.state.superuser, pair.password) as conn:
        names = [
            r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname NOT LIKE 'template%'")
        ]
        assert sorted(names) == sorted(["postgres", *seed.names(5)]), "the template is dropped"
        for name in seed.names(5):
            with connect(primary, pair.state.superuser, pair.password, dbname=name) as db:
                assert db.execute("SELECT count(*) FROM pgbench_accounts").fetchone() == (100_000,), name


def test_a_wrong_password_is_refused_in_one_clear_line(start_pair: StartPair) -> None:
    pair = start_pair()
    wrong = "not-the-pair-password"
    refused = pgpair("status", "--data-dir", str(pair.data_dir), env={**os.environ, "PGPAIR_PASSWORD": wrong})
    assert refused.returncode == 1
    assert refused.stderr.startswith("pgpair: node0 (127.0.0.1:")
    assert "refused the password for role 'caplab'" in refused.stderr
    assert "Traceback" not in refused.stderr and wrong not in refused.stderr + refused.stdout
    try:
        Pair.open(pair.data_dir, password=wrong).status()
    except PasswordRefused as e:
        assert wrong not in str(e)
    else:
        raise AssertionError("a wrong password was accepted")


def test_the_command_line_runs_a_pair_in_the_foreground_until_sigterm() -> None:
    """No --data-dir: a temporary pair, removed when it stops. Another process drives it meanwhile."""
    proc = subprocess.Popen(
        [*MODULE, "start", "--sync", "on"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        port, started = read_started(proc, "pgpair")
        data_dir = Path(started["passfile"]).parent
        assert started["primary"] == "node0" and started["sync"] == "on"
        assert started["nodes"][0]["port"] == port
        assert "password" not in json.dumps(started).lower().replace("passfile", "")

        switched = pgpair("switchover", "--data-dir", str(data_dir))
        assert switched.returncode == 0, switched.stderr
        assert json.loads(switched.stdout)["new_primary"] == "node1"
        status = json.loads(pgpair("status", "--data-dir", str(data_dir)).stdout)
        assert status["primary"] == "node1"
        assert [n["role"] for n in status["nodes"]] == ["standby", "primary"]
        assert status["roles"]["primary"][0] == status["nodes"][1]["pid"]
        assert status["roles"]["standby"][0] == status["nodes"][0]["pid"]
        postmasters = [n["pid"] for n in status["nodes"]]

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        assert not data_dir.exists()
        _, alive = psutil.wait_procs([psutil.Process(p) for p in postmasters if psutil.pid_exists(p)], 30)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
