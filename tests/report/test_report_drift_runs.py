"""The drift check's runs as the report reads them from stored cells: each searched replicate that
found a capacity and each fixed-load replicate's median latency, with its start time; a replicate
without a start time (stored before caplab kept one) and a cell run once give none."""

from __future__ import annotations

from typing import Any

from caplab.analysis.drift import Run
from caplab.report.model.methodology import study_runs
from caplab.store.document import CellRecord


def cell(index: int, metrics: dict[str, Any]) -> CellRecord:
    stored = {"index": index, "factors": {}, "status": "complete", "metrics": metrics, "trials": []}
    return CellRecord.from_json(stored, f"cells[{index}]")


def test_searched_and_fixed_replicates_become_runs_with_their_start_times() -> None:
    searched = cell(
        0,
        {
            "capacity": {
                "model": "open",
                "replicates": [
                    {"found": True, "capacity_rps": 900.0, "started_at": "2026-01-01T10:00:00+00:00"},
                    {"found": False, "capacity_rps": None, "started_at": "2026-01-01T10:01:00+00:00"},
                    {"found": True, "capacity_rps": 950.0, "started_at": None},
                ],
            }
        },
    )
    fixed = cell(
        1,
        {
            "replicated": {
                "replicates": [
                    {"latency_ms": {"p50": 2.0}, "started_at": "2026-01-01T10:02:00.500+00:00"},
                    {"latency_ms": {"p50": None}, "started_at": "2026-01-01T10:03:00+00:00"},
                ]
            }
        },
    )
    once = cell(2, {"throughput": 100.0})
    at = 1767261600.0  # 2026-01-01T10:00:00Z
    assert study_runs([searched, fixed, once]) == (
        Run(0, at, 900.0, higher_is_faster=True),
        Run(1, at + 120.5, 2.0, higher_is_faster=False),
    )
