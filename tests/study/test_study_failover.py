"""A failover measured under load, end to end on real PostgreSQL: pgpair (a primary and a hot
standby) under pgbench's tpcb transaction from caplab's PostgreSQL driver, a switchover or a
killed primary in the middle of the trial, and what it cost read from the load itself — time to
recover, failed transactions — and from a ledger of acknowledged transactions counted afterwards
on the new primary. With synchronous replication a switchover loses nothing acknowledged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
    _summary_leads_with_recovery(report, json.loads((shared_dir / "r" / "results.json").read_text()))


def _summary_leads_with_recovery(report: str, results: dict[str, Any]) -> None:
    """The report's first section is the failover measured, not a capacity study's: each action's
    recovery first, the errors of the outage counted as the outage, nothing rated for a load."""
    summary = report.split('<a id="summary"></a>', 1)[1].split("<a id=", 1)[0]
    leads = re.findall(r"\*\*([^*]+)\.\*\*", summary)
    assert leads and leads[0] == "Recovery", summary
    for action in ("switchover", "kill-primary"):
        [sentence] = [line for line in summary.splitlines() if line.startswith(f"- {action} (")]
        assert "first commit after p50" in sentence and "± 0.2 s" in sentence, sentence
        assert "acknowledged transactions lost" in sentence and "of before" in sentence, sentence
    assert "Recommendation" not in summary and "rate it for" not in summary, summary
    assert not re.search(r"Anomaly\.\*\* [^:\n]*: [\d.,]+% of requests failed", summary), summary
    # What failed in the outages is the outage: counted there, and every error is counted once.
    summarised = {a["action"]: a for a in results["failover"]["actions"]}
    assert set(summarised) == {"switchover", "kill-primary"}
    for outage in results["failover"]["cells"]:
        cell = next(c for c in results["cells"] if c["index"] == outage["cell"])
        assert outage["errors_inside"] > 0, outage
        assert outage["errors_inside"] + outage["errors_outside"] == cell["metrics"]["errors"], outage
    assert results["recommendation"]["ratings"] == []
