"""A cell's capacity from its replicates when the generator stopped some of their searches: the
cell is inconclusive, never failed, and its floor ("capacity ≥ X, the generator's limit here") is
carried across the replicates with the generator named as the limit."""

from __future__ import annotations

from typing import Any

import pytest

from caplab.analysis.generator import generator_limit
from caplab.experiments.capacity.replicates import combine_replicates as combine_json

REASON = "the generator was the limit at 2400 (late) in 2 trials"


def combine_replicates(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The merge, as the tests read it: its values are the JSON they put in."""
    merged: dict[str, Any] = combine_json(summaries)
    return merged


def found(capacity: float) -> dict[str, Any]:
    limit = {"resource": "cpu:server", "kind": "hardware", "evidence": {"signals": []}}
    return {
        "capacity": {"model": "open", "found": True, "capacity_rps": capacity, "ci95": [capacity, capacity]},
        "search_trials": [],
        "limit": limit,
    }


def stopped_at_the_generator(floor: float | None) -> dict[str, Any]:
    shown = f"capacity ≥ {floor:,.0f}/s (the generator's limit here): " if floor else ""
    return {
        "capacity": {
            "model": "open",
            "found": False,
            "capacity_rps": None,
            "generator_saturated": True,
            "capacity_at_least": floor,
            "message": shown + REASON,
        },
        "search_trials": [],
        "limit": generator_limit(floor, "/s", REASON),
    }


def test_every_replicate_stopped_by_the_generator_gives_the_lowest_floor_they_proved() -> None:
    merged = combine_replicates([stopped_at_the_generator(f) for f in (2000.0, 1600.0, 2400.0)])
    capacity = merged["capacity"]
    assert capacity["found"] is False and capacity["generator_saturated"] is True
    assert capacity["capacity_at_least"] == 1600.0 and capacity["ci95"] is None
    assert capacity["message"].startswith("capacity ≥ 1,600/s (the generator's limit here): ")
    assert "in every replicate" in capacity["message"] and REASON in capacity["message"]
    assert merged["limit"]["kind"] == "generator"
    assert [r["capacity_at_least"] for r in capacity["replicates"]] == [2000.0, 1600.0, 2400.0]


def test_a_replicate_without_a_floor_leaves_none_to_claim() -> None:
    capacity = combine_replicates([stopped_at_the_generator(2000.0), stopped_at_the_generator(None)])[
        "capacity"
    ]
    assert capacity["capacity_at_least"] is None
    assert capacity["message"].startswith("no capacity measured: ")


def test_capacities_found_in_other_replicates_are_the_figure_and_the_generator_is_noted() -> None:
    merged = combine_replicates([found(1000.0), stopped_at_the_generator(900.0), found(1100.0)])
    capacity = merged["capacity"]
    assert capacity["found"] is True and capacity["capacity_rps"] == 1050.0
    assert capacity["interval"] == "replicates"
    assert capacity["capacity_at_least"] is None and capacity["generator_saturated"] is False
    assert "(1 stopped at the generator's limit)" in capacity["message"]
    assert merged["limit"]["kind"] == "hardware"


def bracketed(capacity: float, failed_at: float) -> dict[str, Any]:
    summary = found(capacity)
    summary["capacity"]["ci95"] = [capacity, failed_at]
    return summary


def test_replicates_on_the_same_search_step_agree_to_that_step_not_to_zero() -> None:
    capacity = combine_replicates([bracketed(1000.0, 1100.0)] * 3)["capacity"]
    assert capacity["capacity_rps"] == 1000.0
    assert capacity["ci95"] == [1000.0, 1100.0]
    assert capacity["interval"] == "replicates"


def test_replicates_that_spread_wider_than_their_brackets_keep_their_t_interval() -> None:
    capacity = combine_replicates([bracketed(c, c + 10.0) for c in (800.0, 1000.0, 1200.0)])["capacity"]
    low, high = capacity["ci95"]
    # mean 1000, sd 200, t(2) = 4.30: ±496.6 — far wider than any 10/s bracket
    assert low == pytest.approx(1000.0 - 4.30 * 200.0 / 3**0.5)
    assert high == pytest.approx(1000.0 + 4.30 * 200.0 / 3**0.5)
