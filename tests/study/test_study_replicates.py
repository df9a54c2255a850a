"""`replicates: R`: each cell's capacity is searched R times, each on a fresh start of the system;
its interval comes from the replicates and says so, and configurations whose intervals overlap are
marked as indistinguishable in the report instead of being ranked."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from support.studies import caplab, free_port, json_out, knownserver, write_study

pytestmark = pytest.mark.slow

REPLICATES = 2


def test_a_replicated_study_gives_each_capacity_an_interval_from_its_replicates(tmp_path: Path) -> None:
    port = free_port()
    # Two cells of the same server: whatever their means, their intervals must overlap.
    study = {
        "name": "replicated",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": f"exec {knownserver(port, '--cpu-us', '2000')}",
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port}"}},
        },
        "factors": {"copy": ["a", "b"]},
        # No assertion reads the capacity itself, only how the replicates make its interval: the
        # coarsest precision (50 %) stops a trial sooner than 30 % did (200, 400, 800, 600 on a
        # quiet core; 200, 400, 300 on a shared one), four searches over. Half-second trials and
        # confirmations (one interval each): even at 100/s one holds the 24 requests (1.2 × 20) a
        # p95 needs, where a p99's 120 stretched every trial under 240/s to 1-1.5 s (MIN_SAMPLES in
        # experiments/capacity/trial.py): four searches of four 0.8 s trials, not 1.3-1.8 s ones.
        "load": {"duration": "500ms", "warmup": "300ms"},
        "slo": ["p95<=100ms"],
        "search": {"precision": "50%", "trial": "500ms", "repeats": 1, "start": 200},
        "replicates": REPLICATES,
    }
    path = write_study(tmp_path / "study.yaml", study)
    done = caplab(
        "run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "-o", tmp_path / "r", timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count(f"replicate 1 of {REPLICATES}") == 2, "each cell announces its replicates"
    cells = json_out(done)["cells"]
    for cell in cells:
        capacity = cell["metrics"]["capacity"]
        replicates = capacity["replicates"]
        assert len(replicates) == REPLICATES and capacity["replicate_count"] == REPLICATES
        found = [r["capacity_rps"] for r in replicates if r["found"]]
        assert len(found) >= 2, replicates
        # The cell's figure is the replicates' mean; its interval their t-interval around it, or
        # the mean of their search brackets where that is wider (replicates on one search step).
        mean = statistics.fmean(found)
        assert capacity["capacity_rps"] == pytest.approx(mean)
        assert capacity["interval"] == "replicates"
        low, high = capacity["ci95"]
        assert low <= capacity["capacity_rps"] <= high
        half = statistics.stdev(found) * {2: 12.71, 3: 4.30}[len(found)] / len(found) ** 0.5
        brackets = [r["ci95"] for r in replicates if r["found"]]
        bracket_high = statistics.fmean(b[1] for b in brackets)
        assert high == pytest.approx(max(mean + half, bracket_high), rel=1e-6)
        # Every replicate's trials are kept, each SUT start its own.
        assert capacity["trial_count"] == sum(r["trial_count"] for r in replicates)
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    entries = {e["cell"]: e for e in results["capacity"]}
    assert entries[0]["indistinguishable"] == [1] and entries[1]["indistinguishable"] == [0]
    report = (tmp_path / "r" / "report.md").read_text()
    assert f"(95%, {REPLICATES} replicates) ≈ #1" in report
    assert "they are not distinguishable" in report
    # Nor does the recommendation rank them: no best between the two, a stated tiebreak instead.
    assert "none is named the best" in results["recommendation"]["text"]
