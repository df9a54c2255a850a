"""A fixed-load cell run as replicates: its headline figures (throughput, latency percentiles,
error ratio) are the replicates' mean with a 95 % t-interval over them, each replicate's own
figures and start time kept, and its faults merged from every replicate as before."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from caplab.experiments.capacity.replicates import combine_replicates as combine_json


def combine_replicates(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = combine_json(summaries)
    return merged


def replicate(throughput: float, p99: float | None, errors: float, at: str, **extra: Any) -> dict[str, Any]:
    latency = {"p50": p99 / 4 if p99 else None, "p90": None, "p95": p99, "p99": p99}
    figures = {"trials": 1, "throughput": throughput, "latency_ms": latency, "error_ratio": errors}
    return {"started_at": at, "fixed": figures | {"generator_saturated": False}, **extra}


def test_the_cell_gives_each_headline_figure_as_the_replicates_mean_with_its_t_interval() -> None:
    runs = [(190.0, 8.0, 0.0), (200.0, 10.0, 0.01), (195.0, 12.0, 0.02)]
    merged = combine_replicates([replicate(*r, at=f"2026-01-01T00:00:0{i}") for i, r in enumerate(runs)])
    replicated = merged["replicated"]
    assert replicated["replicate_count"] == 3 and replicated["interval"] == "replicates"
    throughputs = [r[0] for r in runs]
    mean = statistics.fmean(throughputs)
    half = 4.30 * statistics.stdev(throughputs) / 3**0.5  # t at 2 degrees of freedom
    assert merged["throughput"] == pytest.approx(mean)
    assert replicated["throughput"]["mean"] == pytest.approx(mean)
    assert replicated["throughput"]["ci95"] == pytest.approx([mean - half, mean + half])
    assert replicated["latency_ms"]["p99"]["mean"] == pytest.approx(10.0)
    low, high = replicated["latency_ms"]["p99"]["ci95"]
    assert low < 8.0 and high > 12.0
    assert replicated["latency_ms"]["p90"] is None, "a percentile one replicate withheld is not averaged"
    assert replicated["error_ratio"]["mean"] == pytest.approx(0.01)
    assert replicated["error_ratio"]["ci95"][0] == 0.0, "an error ratio's interval stops at zero"
    kept = replicated["replicates"]
    assert [r["throughput"] for r in kept] == throughputs
    assert [r["started_at"] for r in kept] == [f"2026-01-01T00:00:0{i}" for i in range(3)]
    assert "fixed" not in merged and "started_at" not in merged


def test_one_replicate_adds_no_interval() -> None:
    merged = combine_replicates([replicate(200.0, 10.0, 0.0, at="2026-01-01T00:00:00")])
    assert merged == {}


def test_faults_and_ledgers_of_every_replicate_stay_merged() -> None:
    summaries: list[dict[str, Any]] = [
        replicate(200.0, 10.0, 0.0, at=f"2026-01-01T00:00:0{i}", recovery=[{"trial": i}], ledger=[{"n": i}])
        for i in range(2)
    ]
    merged = combine_replicates(summaries)
    assert merged["recovery"] == [{"trial": 0}, {"trial": 1}]
    assert merged["ledger"] == [{"n": 0}, {"n": 1}]
    assert merged["replicated"]["replicate_count"] == 2


def test_searched_replicates_keep_their_start_times() -> None:
    summaries: list[dict[str, Any]] = [
        {
            "started_at": f"2026-01-01T00:00:0{i}",
            "capacity": {"model": "open", "found": True, "capacity_rps": c, "ci95": [c, c]},
            "search_trials": [],
            "limit": None,
        }
        for i, c in enumerate((100.0, 110.0))
    ]
    capacity = combine_replicates(summaries)["capacity"]
    assert [r["started_at"] for r in capacity["replicates"]] == ["2026-01-01T00:00:00", "2026-01-01T00:00:01"]
