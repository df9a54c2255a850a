"""The availability-group failover (seed 004) end to end on real PostgreSQL, cut to 20 databases:
pgpair with synchronous replication, a probe transaction on every database every 100 ms (and tpcb
on a tenth of them in the loaded cell), a switchover and a killed primary each repeated twice.
Every database's own recovery is read from its interval series, the cell reports k/K against the
recovery SLO, and under synchronous replication nothing acknowledged is lost, switched over or killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab import studies
from support.studies import caplab, json_out

pytestmark = pytest.mark.slow  # two 20-database pairs built, seeded and failed over four times

DATABASES = 20
REPEATS = 2


def test_every_database_recovery_is_measured_and_the_failovers_rated_k_of_k(shared_dir: Path) -> None:
    path = studies.prepare("availability-groups", shared_dir) / "quick.yaml"
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = {c["factors"]["action"]: c for c in json_out(done)["cells"]}
    assert set(cells) == {"switchover", "kill-primary"}
    for action, cell in cells.items():
        # pg_ctl daemonised the servers; the roles found them by pgpair's primary.pid/standby.pid
        # (tests/systems/test_pgpair_roles.py checks the figures against /proc).
        for role in ("primary", "standby"):
            cpu = cell["resources"][role]["cpu_percent"]
            assert cpu > 0, f"{action}: {role} CPU under load"
        metrics = cell["metrics"]
        failovers = metrics["failover"]
        assert len(failovers) == REPEATS, f"{action}: one failover read per trial"
        for f in failovers:
            r = f["recovery"]
            names = {d["database"] for d in r["databases"]}
            assert names == {f"ag_{k}" for k in range(DATABASES)}, f"{action}: every database read"
            assert all(d["disrupted"] for d in r["databases"]), f"{action}: every database saw the fault"
            assert all(d["recovery_s"] is not None for d in r["databases"]), r["not_recovered"]
            assert r["p50_s"] <= r["p95_s"] <= r["max_s"]
            assert r["group_s"] is not None and r["group_s"] > 0, "pgpair's own group-level time"
            # the 0.1 s interval, or a database's gap between probes where longer (10 a second
            # asked; an outage's unsent requests widen it a little)
            assert 0.1 - 1e-9 <= r["resolution_s"] <= 0.15, r["resolution_s"]
        success = metrics["success"]
        assert success["trials"] == REPEATS and success["text"] == f"{success['successes']}/{REPEATS}"
        assert len(success["failures"]) == REPEATS - success["successes"]
        # Each trial's ledger against the trial's own counts, interval by interval (warm-up
        # included): the COMMITs the engine saw answered are the acknowledged, and the databases
        # together cannot hold more rows than transactions were sent. Synchronous replication,
        # planned or not: every acknowledged commit was on the standby first, so no database lost
        # one (lost is counted database by database).
        assert len(metrics["ledger"]) == len(cell["trials"]) == REPEATS
        for ledger, trial in zip(metrics["ledger"], cell["trials"], strict=True):
            sent = sum(i["sent"] for i in trial["intervals"])
            acknowledged = sum(i["completed"] for i in trial["intervals"])
            assert ledger["acknowledged"] == acknowledged > 500, ledger  # up to 200 probes/s over 12 s
            assert ledger["held"] <= sent, (action, ledger, sent)
            assert ledger["lost"] == 0 and "lost_in" not in ledger, (action, ledger)
    assert not any(shared_dir.glob("ag-*/pgpair.json")), "each pair removed after its cell"
    report = (shared_dir / "r" / "report.md").read_text()
    assert "Failover by database" in report and "Failover success rate" in report
