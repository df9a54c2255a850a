"""A killed primary recovered by a real HA manager, in phases, end to end: the built-in
availability-groups/pgha.yaml (pgha: two PostgreSQL nodes under Patroni and etcd, 4 databases, the
leader SIGKILLed and nothing else, twice) on free ports. Each failover carries Patroni's phases on
the trial's clock, in order; the manager's ``writable`` comes no later than the clients' first
commit (the issue's "phases add up to the client-side recovery within 0.2 s"); and the report's
Recovery section shows the phases and the Summary says which one dominates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caplab import studies
from caplab.analysis.phases import AGREE_S
from caplab.systems.pgha.patroni import PATRONI as PATRONI_BIN
from support.require import PATRONI, require
from support.studies import caplab, json_out, on_free_ports

pytestmark = pytest.mark.slow  # a Patroni cluster built, its leader killed twice under load

PORTS = {"pg": (7610, 7611), "rest": (7620, 7621), "etcd": (7630,)}
"""The study file's fixed ports, each moved to a free run of its own."""


def test_a_killed_primary_is_recovered_by_patroni_in_phases_the_clients_agree_with(shared_dir: Path) -> None:
    missing = [p for p in (PATRONI_BIN, "/usr/bin/etcd") if not Path(p).exists()]
    require(
        PATRONI,
        [f"{', '.join(missing)} not installed (apt-get install patroni etcd-server)"] if missing else [],
    )
    shipped = (studies.study_folder("availability-groups") / "pgha.yaml").read_text()
    path = shared_dir / "pgha.yaml"
    path.write_text(on_free_ports(shipped, PORTS))
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [cell] = json_out(done)["cells"]
    failovers = cell["metrics"]["failover"]
    assert len(failovers) == 2, "one failover read per trial"
    for f in failovers:
        p, r = f["phases"], f["recovery"]
        assert p["fault_s"] == pytest.approx(r["fault_s"]), "the databases are read from the same fault"
        at = [p["detected_s"], p["promoted_s"], p["writable_s"]]
        assert 0 < at[0] <= at[1] <= at[2], p
        assert p["elected_s"] >= p["detected_s"], p
        # A client cannot commit on a primary that does not take writes yet: the two readings are on
        # one clock when the first commit comes no earlier than writable, within the resolutions.
        assert p["first_commit_s"] is not None and p["writable_s"] <= p["first_commit_s"] + AGREE_S, p
        assert p["first_commit_s"] <= p["last_commit_s"] and p["load_back_s"] is not None, p
        assert r["group_s"] == pytest.approx(p["writable_s"], abs=0.002), "pgha's writable_after_s"
        assert "Patroni's ttl" in p["set_by"]["detected"]
    assert not any(shared_dir.glob("pgha/pgha.json")), "the cluster removed after its cell"
    report = (shared_dir / "r" / "report.md").read_text()
    recovery = report.split('<a id="recovery"></a>', 1)[1].split("<a id=", 1)[0]
    assert "**Failover phases**" in recovery and "**Failover phases over the trials**" in recovery
    for phase in ("detected", "elected", "promoted", "writable", "first commit", "load back"):
        assert f"| {phase} " in recovery, phase
    summary = report.split('<a id="summary"></a>', 1)[1].split("<a id=", 1)[0]
    [sentence] = [line for line in summary.splitlines() if line.startswith("- kill-primary (")]
    assert "phases after the fault, p50 (max): detected" in sentence, sentence
    assert "of the recovery to the first commit: " in sentence, sentence
    actions = json.loads((shared_dir / "r" / "results.json").read_text())["failover"]["actions"]
    assert [s["name"] for s in actions[0]["steps"]][:4] == [
        "detection",
        "election",
        "promotion",
        "taking writes",
    ]
