"""Two runs' capacities compared: the ratio's interval by interval arithmetic, checked by hand."""

from __future__ import annotations

import pytest

from caplab.analysis.compare import (
    Change,
    Figure,
    compare_figures,
    compare_runs,
    compare_within_runs,
    relative,
)


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


def test_runs_on_different_machines_compare_each_cell_over_a_reference_cell() -> None:
    """A machine twice as fast doubles every cell: absolute figures call each cell faster, figures
    over the first cell call them the same; a cell that gained on its own still shows."""
    here = {"x=1": fig(100, 90, 110), "x=2": fig(200, 180, 220), "x=4": fig(300, 270, 330)}
    there = {"x=1": fig(200, 180, 220), "x=2": fig(400, 360, 440), "x=4": fig(1200, 1100, 1300)}
    assert all(c.change is Change.FASTER for c in compare_runs(here, there)[0])
    cells, only, reference = compare_within_runs(here, there)
    assert reference == "x=1" and only == []
    by_key = {c.key: c for c in cells}
    assert set(by_key) == {"x=2", "x=4"}, "the reference is 1 by definition: not compared"
    two = by_key["x=2"]
    assert two.a.value == pytest.approx(2.0) and two.b.value == pytest.approx(2.0)
    # x=2 over x=1 here: [180 / 110, 220 / 90]; there: [360 / 220, 440 / 180] — the same interval.
    assert two.a.low == pytest.approx(180 / 110) and two.a.high == pytest.approx(220 / 90)
    assert two.change is Change.INDISTINGUISHABLE and two.a.unit == "× x=1"
    four = by_key["x=4"]  # 3 against 6 times the reference: [1100/220, 1300/180] over [270/110, 330/90]
    assert four.ratio == pytest.approx(2.0) and four.change is Change.FASTER
    assert four.low == pytest.approx((1100 / 220) / (330 / 90))


def test_a_reference_without_a_figure_is_skipped_and_a_cell_without_one_has_no_ratio() -> None:
    a = {"x=1": fig(None), "x=2": fig(200, 180, 220), "x=3": fig(None)}
    b = {"x=1": fig(150, 140, 160), "x=2": fig(400, 380, 420), "x=3": fig(300, 290, 310)}
    cells, _, reference = compare_within_runs(a, b)
    assert reference == "x=2"
    assert {c.key: c.change for c in cells} == {"x=1": Change.UNKNOWN, "x=3": Change.UNKNOWN}
    assert relative({"x": fig(10)}, "x") == {}
    assert compare_within_runs({"x": fig(None)}, {"x": fig(5)}) == ([], [], None)
