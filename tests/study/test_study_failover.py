"""A failover measured under load, end to end on real PostgreSQL: pgpair (a primary and a hot
standby) under pgbench's tpcb transaction from caplab's PostgreSQL driver, a switchover or a
killed primary in the middle of the trial, and what it cost read from the load itself — time to
recover, failed transactions — and from a ledger of acknowledged transactions counted afterwards
on the new primary. With synchronous replication a switchover loses nothing acknowledged."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab import studies
from support.studies import caplab, json_out

pytestmark = pytest.mark.slow  # two pairs built, seeded and failed over under load


def test_a_switchover_and_a_killed_primary_under_load(shared_dir: Path) -> None:
    """The built-in pg-failover study's quick cut, run from another directory (its pair's pgpass
    files are found under the study's)."""
    path = studies.prepare("pg-failover", shared_dir) / "quick.yaml"
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = {c["factors"]["action"]: c for c in json_out(done)["cells"]}
    for action, cell in cells.items():
        metrics = cell["metrics"]
        [entry] = metrics["recovery"]
        assert entry["action"]["exit_code"] == 0, entry["action"]
        load = entry["load"]
        assert load["disrupted"], f"{action}: the primary went away under load"
        # back within the trial, with time to spare (about 1 s on a quiet machine; a busy one slows
        # the role change, not the measurement)
        assert load["recovery_s"] is not None and load["recovery_s"] < 8, load
        # The ledger against the trial's own counts, interval by interval (warm-up included): the
        # COMMITs the engine saw answered are what it calls acknowledged, and the database cannot
        # hold more rows than transactions were sent (a ledger left unemptied, or counted on the
        # wrong node or table, would).
        [ledger], [trial] = metrics["ledger"], cell["trials"]
        sent = sum(i["sent"] for i in trial["intervals"])
        assert ledger["acknowledged"] == sum(i["completed"] for i in trial["intervals"]) > 100, ledger
        assert ledger["held"] <= sent, (ledger, sent)
        nodes = [k for k in cell["resources"] if k.startswith("pg:")]
        assert len(nodes) == 2, cell["resources"].keys()
    # Synchronous replication: every acknowledged commit was on the standby before it was
    # acknowledged, so the new primary holds at least every one of them.
    [switched] = cells["switchover"]["metrics"]["ledger"]
    assert switched["lost"] == 0 and switched["held"] >= switched["acknowledged"], switched
    assert "password" not in done.stdout
    assert not any(shared_dir.glob("pg-*/pgpair.json")), "each pair removed after its cell"
    report = (shared_dir / "r" / "report.md").read_text()
    assert "| kill-primary |" in report and "acknowledged" in report, "the Recovery table with its ledger"
