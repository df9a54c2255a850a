"""Two runs' capacities compared: the ratio's interval by interval arithmetic, checked by hand."""

from __future__ import annotations

import pytest

from caplab.analysis.compare import Change, Figure, compare_figures, compare_runs


def fig(
    value: float | None, low: float | None = None, high: float | None = None, limit: str = "cpu:server"
) -> Figure:
    return Figure(value, low, high, "req/s", limit)


def test_half_the_capacity_with_tight_intervals_is_slower_with_the_hand_computed_interval() -> None:
    # 400 µs against 200 µs per request: 2,500/s [2,400, 2,600] against 5,000/s [4,800, 5,200].
    c = compare_figures("cpu=400", fig(5000, 4800, 5200), fig(2500, 2400, 2600))
    assert c.ratio == pytest.approx(0.5)
    assert c.low == pytest.approx(2400 / 5200) and c.high == pytest.approx(2600 / 4800)  # 0.4615, 0.5417
    assert c.change is Change.SLOWER
    assert c.slower_than(0.05) and c.slower_than(0.45) and not c.slower_than(0.46)


def test_overlapping_intervals_are_indistinguishable_and_never_slower() -> None:
    c = compare_figures("x", fig(1000, 900, 1100), fig(950, 880, 1020))
    assert c.change is Change.INDISTINGUISHABLE
    assert c.low is not None and c.high is not None and c.low < 1 < c.high
    assert not c.slower_than(0.01)


def test_a_side_without_an_interval_or_a_capacity_is_not_called() -> None:
    assert compare_figures("x", fig(1000), fig(500)).change is Change.UNKNOWN
    assert compare_figures("x", fig(None), fig(500, 450, 550)).change is Change.UNKNOWN
    assert not compare_figures("x", fig(1000), fig(500)).slower_than(0.05)


def test_a_changed_limit_says_what_it_was_and_cells_in_one_run_only_are_named() -> None:
    a = {"n=1": fig(100, 90, 110, "cpu:engine"), "n=2": fig(200, 190, 210)}
    b = {"n=1": fig(300, 290, 310, "volume:log"), "n=3": fig(1, 1, 1)}
    cells, only = compare_runs(a, b)
    assert [c.key for c in cells] == ["n=1"]
    assert cells[0].change is Change.FASTER
    assert cells[0].limit_changed == "was cpu:engine, now volume:log"
    assert only == ["n=2", "n=3"]
