"""The consolidation table of a searched study, by hand: only each placement's confirmation trials
(at its capacity) count, never the search's probes, and the combined server's CPU is scaled to
the load the single-role servers carried, while memory is compared as measured."""

from __future__ import annotations

from typing import Any

import pytest

from caplab.collect.base import ResourceSample
from caplab.report.model.cells import TrialKey
from caplab.report.model.consolidation import consolidation_entries
from caplab.store.document import CellRecord

SPEC = {"consolidation": {"apart": {"transport": "small", "access": "small"}, "together": "big"}}
ROLES = ("transport", "access")


def trial(kind: str, index: int, users: int) -> dict[str, Any]:
    return {"trial": {"kind": kind, "index": index}, "users": users, "warmup_s": 0.0, "duration_s": 2.0}


def cell(index: int, placement: str, trials: list[dict[str, Any]]) -> CellRecord:
    stored = {"index": index, "factors": {"placement": placement}, "status": "complete", "trials": trials}
    return CellRecord.from_json(stored, f"cells[{index}]")


def samples(cpu: dict[str, float], rss: dict[str, float]) -> list[ResourceSample]:
    """Two samples a second apart with the same figures: their mean over the window is the figure."""
    return [
        ResourceSample(t, f"role:{role}", metric, value)
        for t in (1.0, 2.0)
        for role in ROLES
        for metric, value in (("cpu_percent", cpu[role]), ("rss_mb", rss[role]))
    ]


def test_confirmation_trials_only_and_the_combined_cpu_scaled_to_the_single_role_load() -> None:
    apart = cell(
        0, "apart", [trial("search", 0, 200), trial("search:confirm", 0, 70), trial("search:confirm", 1, 70)]
    )
    together = cell(1, "together", [trial("search", 0, 200), trial("search:confirm", 0, 60)])
    probe = samples({"transport": 90.0, "access": 90.0}, {"transport": 999.0, "access": 999.0})
    by_trial: dict[TrialKey, list[ResourceSample]] = {
        (0, "search", 0): probe,  # a search probe far above capacity: must not count
        (0, "search:confirm", 0): samples(
            {"transport": 6.0, "access": 8.0}, {"transport": 300.0, "access": 400.0}
        ),
        (0, "search:confirm", 1): samples(
            {"transport": 8.0, "access": 6.0}, {"transport": 320.0, "access": 380.0}
        ),
        (1, "search", 0): probe,
        (1, "search:confirm", 0): samples(
            {"transport": 9.0, "access": 9.0}, {"transport": 310.0, "access": 340.0}
        ),
    }
    (entry,) = consolidation_entries(SPEC, [apart, together], by_trial)
    cpu, memory = entry["comparisons"]
    # Apart: 6 + 8 and 8 + 6 at 70 users, 14 % of a core. Together: 18 % at 60 users, which is
    # 18 × 70 / 60 = 21 % at the single-role servers' 70.
    assert cpu["predicted"] == pytest.approx(14.0)
    assert cpu["actual"] == pytest.approx(21.0)
    assert cpu["ratio"] == pytest.approx(1.5)
    # Memory as measured: (700 + 700) / 2 apart, 650 together.
    assert memory["predicted"] == pytest.approx(700.0)
    assert memory["actual"] == pytest.approx(650.0)
