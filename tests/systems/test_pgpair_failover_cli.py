"""`caplab failover` against a real pgpair under tpcb: a switchover at a set time and a killed primary
fired when the standby's flush lag shows it is being fed, each read as the study reads it — the
outage, the errors by kind, throughput before and after, the database back, the replication lag
(written, flushed, replayed) — and the ledger counted afterwards on the new primary."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from caplab.systems.pgpair import Pair

StartPair = Callable[..., Pair]
pytestmark = pytest.mark.slow  # a pair built, seeded and failed over under load per test


def failover(caplab_cmd: list[str], pair: Pair, action: str, *args: str) -> tuple[dict[str, Any], str]:
    """Runs `caplab failover` at the pair's ``ag_0`` (the password from its pgpass file) with the
    pair's own ``action``; the JSON it printed and its stderr."""
    command = [
        *caplab_cmd, "failover", pair.url("ag_0"), "--users", "8", "-d", "9s", "--interval", "200ms",
        "--action", f"python -m caplab.systems.pgpair {action} --data-dir {pair.data_dir}",
        "--name", action.split()[0], "--ledger", "--json", *args,
    ]  # fmt: skip
    env = os.environ | {"PGPASSFILE": str(pair.passfile)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert pair.password not in done.stdout + done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_switchover_at_a_time_is_measured_from_the_clients_side(
    caplab_cmd: list[str], start_pair: StartPair
) -> None:
    pair = start_pair(sync="on", databases=1)
    result, _ = failover(caplab_cmd, pair, "switchover", "--at", "2s", "--within", "5s")
    report = result["failover"]
    assert report["action"]["exit_code"] == 0 and report["action"]["reported"]["writable_after_s"] > 0
    load = report["load"]
    assert load["disrupted"] and load["recovery_s"] is not None and load["recovery_s"] < 5, load
    assert load["before_rps"] > 0 and load["after_rps"] > 0
    assert sum(report["errors"]["by_kind"].values()) == result["errors"] > 0, "the old primary went away"
    databases = report["databases"]
    assert databases["verdict"] == {"success": True, "reasons": []}
    [ag_0] = databases["recovery"]["databases"]
    assert ag_0["database"] == "ag_0" and ag_0["recovery_s"] is not None
    nodes = report["replication"]
    assert len(nodes) == 2, nodes
    lags = [m for m in nodes.values() if "flush_lag_ms" in m]
    assert lags and all(m["write_lag_ms"]["max"] >= 0 and m["replay_lag_ms"]["max"] >= 0 for m in lags)
    assert report["ledger"]["lost"] == 0, "synchronous replication loses nothing acknowledged"
    assert pair.roles() == {"node0": "standby", "node1": "primary"}


def test_a_killed_primary_fires_when_its_condition_holds(
    caplab_cmd: list[str], start_pair: StartPair
) -> None:
    pair = start_pair(sync="off", databases=1)
    result, _ = failover(caplab_cmd, pair, "kill-primary --detect-delay 0.5", "--when", "flush_lag_ms > 0")
    report = result["failover"]
    action = report["action"]
    assert action["exit_code"] == 0 and action["triggered"].startswith("flush_lag_ms > 0: "), action
    assert report["load"]["disrupted"] and report["load"]["recovery_s"] is not None
    ledger = report["ledger"]
    # Asynchronous: what was lost is measured, not assumed (usually a few, possibly none). What the
    # new primary held is counted apart from caplab's ledger: tpcb adds a pgbench_history row in
    # each transaction, and the pair was seeded with none.
    with psycopg.connect(pair.url("ag_0"), passfile=str(pair.passfile)) as conn:
        history = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
    assert history is not None and ledger["held"] == history[0], (ledger, history)
    assert ledger["acknowledged"] > 100 and ledger["lost"] == max(0, ledger["acknowledged"] - history[0])
    assert pair.roles()["node1"] == "primary"
