"""`replicates: R`: each cell's capacity is searched R times, each on a fresh start of the system;
its interval comes from the replicates and says so, and configurations whose intervals overlap are
marked as indistinguishable in the report instead of being ranked."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from caplab.units import interval, num
from support.studies import caplab, free_port, json_out, knownserver_sut, write_study

pytestmark = pytest.mark.slow

REPLICATES = 2


def test_a_replicated_study_gives_each_capacity_an_interval_from_its_replicates(tmp_path: Path) -> None:
    port = free_port()
    # Two cells of the same server: whatever their means, their intervals must overlap.
    study = {
        "name": "replicated",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, "--cpu-us", "2000"),
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


FIXED_REPLICATES = 3


def test_a_fixed_load_run_as_replicates_gives_each_figure_an_interval_over_them(tmp_path: Path) -> None:
    """Fixed loads searched nothing, so their cell kept one replicate's (empty) summary and no
    interval: now throughput, latency and errors are the replicates' mean with a 95 % interval, in
    results.json, the results table and the capacity table `caplab compare` reads."""
    port = free_port()
    study = {
        "name": "fixed-replicated",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, "--cpu-us", "500"),
        "factors": {"copy": ["a", "b"]},
        "load": {"rate": 200, "duration": "1s", "warmup": "300ms"},
        "replicates": FIXED_REPLICATES,
    }
    path = write_study(tmp_path / "study.yaml", study)
    db = f"sqlite:///{tmp_path / 'f.db'}"
    done = caplab("run", path, "--db", db, "-o", tmp_path / "r", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    for cell in results["cells"]:
        replicated = cell["metrics"]["replicated"]
        runs = replicated["runs"]
        assert replicated["replicates"] == FIXED_REPLICATES and len(runs) == FIXED_REPLICATES
        assert all(r["started_at"] for r in runs) and [r["started_at"] for r in runs] == sorted(
            r["started_at"] for r in runs
        )
        throughputs = [r["throughput"] for r in runs]
        mean = statistics.fmean(throughputs)
        half = 4.30 * statistics.stdev(throughputs) / FIXED_REPLICATES**0.5  # t, 2 degrees of freedom
        assert replicated["throughput"]["mean"] == pytest.approx(mean)
        assert replicated["throughput"]["ci95"] == pytest.approx([max(0.0, mean - half), mean + half])
        p99s = [r["p99_ms"] for r in runs]
        assert replicated["p99_ms"]["mean"] == pytest.approx(statistics.fmean(p99s))
        low, high = replicated["p99_ms"]["ci95"]
        assert low <= statistics.fmean(p99s) <= high
        assert replicated["error_ratio"]["mean"] == pytest.approx(
            statistics.fmean(r["error_ratio"] for r in runs)
        )
    # The figure each configuration is rated by carries the interval over its replicates.
    for entry in results["capacity"]:
        assert entry["basis"] == "throughput" and entry["interval"] == "replicates"
        assert entry["replicates"] == FIXED_REPLICATES and None not in entry["ci95"]
    table = (tmp_path / "r" / "report.md").read_text().split("**Results per configuration**")[1]
    assert "mean with its 95% interval over them" in table
    for cell in results["cells"]:
        shown = cell["metrics"]["replicated"]["throughput"]
        assert f"| {num(shown['mean'])} {interval(*shown['ci95'])} |" in table
    # Six runs of two cells are too few for the drift check: it says so, and asks for six each.
    drift = next(i for i in results["methodology"] if i["principle"] == "drift")
    assert drift["grade"] == "warn" and "cannot be tested" in drift["reason"]
    assert drift["change"]["setting"] == "replicates: 6"
    # `caplab compare` reads those intervals: a study against itself is indistinguishable.
    compared = json_out(caplab("compare", "latest", "latest", "--db", db, "--json"))
    assert {c["change"] for c in compared["cells"]} == {"indistinguishable"}
    assert all(c["interval"] is not None for c in compared["cells"])
