"""Findings judged on hand-made cells: a verdict of each kind (reproduced, contradicted,
inconclusive) for each judgement, with the figures worked out by hand in the docstrings."""

from __future__ import annotations

from typing import Any

import pytest

from caplab.analysis.finding_trend import slope_interval
from caplab.analysis.finding_types import Reading
from caplab.analysis.findings import CellFigures, Judged, Placement, StudyFigures, Verdict, judge
from caplab.grammar.findings import Finding

R, C, N = Verdict.REPRODUCED, Verdict.CONTRADICTED, Verdict.INCONCLUSIVE
"""N: not decided (inconclusive)."""


def finding(**judgement: Any) -> Finding:
    return Finding.model_validate({"claim": "a claim", **judgement})


def cell(index: int, factors: dict[str, Any], **figures: Any) -> CellFigures:
    readings = {k: v for k, v in figures.items() if isinstance(v, Reading)}
    rest = {k: v for k, v in figures.items() if not isinstance(v, Reading)}
    label = " ".join(f"{k}={v}" for k, v in factors.items())
    return CellFigures(index, label, factors, readings, **rest)


def judged(f: Finding, *cells: CellFigures, placements: tuple[Placement, ...] = ()) -> Judged:
    return judge(f, StudyFigures(cells, placements))


# -- compare ------------------------------------------------------------------------------------

SSD = cell(0, {"setup": "ssd"}, capacity=Reading.of(200, 180, 220))
HDD = cell(1, {"setup": "hdd"}, capacity=Reading.of(100, 90, 110))
RAID = cell(2, {"setup": "raid"}, capacity=Reading.of(105, 95, 115))


def compare(ratio: Any, a: str, b: str) -> Finding:
    return finding(
        compare={"metric": "capacity", "cells": {"setup": a}, "over": {"setup": b}, "ratio": ratio}
    )


def test_a_ratio_whose_whole_interval_is_above_one_reproduces_a_faster_claim() -> None:
    """200 [180, 220] over 100 [90, 110]: 2.0, from 180/110 = 1.636 to 220/90 = 2.444."""
    j = judged(compare(">1", "ssd", "hdd"), SSD, HDD)
    assert j.verdict == R
    (ratio,) = j.estimates
    assert ratio.value == 2.0
    assert ratio.low == pytest.approx(1.6364, abs=1e-4) and ratio.high == pytest.approx(2.4444, abs=1e-4)
    assert [f.label for f in j.figures] == ["setup=ssd", "setup=hdd"]
    assert "2 [1.64, 2.44]" in j.reason


def test_the_same_interval_contradicts_the_opposite_claim() -> None:
    assert judged(compare("<1", "ssd", "hdd"), SSD, HDD).verdict == C
    assert judged(compare("<=0.5", "ssd", "hdd"), SSD, HDD).verdict == C


def test_a_ratio_interval_straddling_the_bound_is_inconclusive() -> None:
    """105 [95, 115] over 100 [90, 110]: 0.864 to 1.278 straddles 1."""
    j = judged(compare(">1", "raid", "hdd"), RAID, HDD)
    assert j.verdict == N
    assert j.estimates[0].low == pytest.approx(95 / 110) and j.estimates[0].high == pytest.approx(115 / 90)


def test_within_a_range_is_reproduced_inside_contradicted_outside_inconclusive_across() -> None:
    assert judged(compare([1.5, 2.5], "ssd", "hdd"), SSD, HDD).verdict == R
    assert judged(compare([0.5, 1.5], "ssd", "hdd"), SSD, HDD).verdict == C
    assert judged(compare([0.9, 1.1], "raid", "hdd"), RAID, HDD).verdict == N


def test_cells_without_an_interval_are_judged_on_their_point_values_and_say_so() -> None:
    a = cell(0, {"setup": "ssd"}, capacity=Reading.of(120))
    b = cell(1, {"setup": "hdd"}, capacity=Reading.of(100))
    j = judged(compare(">1", "ssd", "hdd"), a, b)
    assert j.verdict == R and j.estimates[0].low == j.estimates[0].high == 1.2
    assert "without an interval" in j.reason


def test_a_side_that_measured_nothing_is_inconclusive() -> None:
    nothing = cell(1, {"setup": "hdd"})
    j = judged(compare(">1", "ssd", "hdd"), SSD, nothing)
    assert j.verdict == N and "no capacity measured" in j.reason


def test_per_factor_every_value_must_agree_and_one_disagreeing_contradicts() -> None:
    """External over internal at each size: 2.0 at 10,000 (reproduced) and 0.5 at 50,000
    (contradicted) — contradicted overall, the reason naming the size that disagrees."""
    cells = [
        cell(0, {"objects": 10000, "layout": "external"}, capacity=Reading.of(200, 190, 210)),
        cell(1, {"objects": 10000, "layout": "internal"}, capacity=Reading.of(100, 95, 105)),
        cell(2, {"objects": 50000, "layout": "external"}, capacity=Reading.of(50, 45, 55)),
        cell(3, {"objects": 50000, "layout": "internal"}, capacity=Reading.of(100, 95, 105)),
    ]
    f = finding(
        compare={
            "metric": "capacity",
            "cells": {"layout": "external"},
            "over": {"layout": "internal"},
            "ratio": ">1",
            "per": "objects",
        }
    )
    j = judged(f, *cells)
    assert j.verdict == C and [e.name for e in j.estimates] == [
        "ratio at objects=10000",
        "ratio at objects=50000",
    ]
    assert "objects=50000" in j.reason and "objects=10000" not in j.reason
    assert judged(f, *cells[:2]).verdict == R


# -- trend --------------------------------------------------------------------------------------


def test_the_slope_and_its_interval_are_the_textbook_ones() -> None:
    """x 1..4, y 10, 12, 15, 17: Sxx = 5, Sxy = 12, slope 2.4; residuals 0.1, -0.3, 0.3, -0.1, SSR
    0.2, s² = 0.1, se = √(0.1/5) = 0.14142; t(2) = 4.30: 2.4 ± 0.60811."""
    slope = slope_interval([(1, 10), (2, 12), (3, 15), (4, 17)])
    assert slope is not None and slope.value == pytest.approx(2.4)
    assert slope.low == pytest.approx(2.4 - 0.60811, abs=1e-4)
    assert slope.high == pytest.approx(2.4 + 0.60811, abs=1e-4)
    assert slope_interval([(1, 10), (2, 12)]) is None
    assert slope_interval([(1, 10), (1, 12), (1, 11)]) is None


def along(ys: list[float]) -> list[CellFigures]:
    return [
        cell(i, {"databases": x}, recovery=Reading.of(y))
        for i, (x, y) in enumerate(zip([1, 2, 3, 4], ys, strict=True))
    ]


def trend(sign: str) -> Finding:
    return finding(trend={"metric": "recovery", "factor": "databases", "sign": sign})


def test_a_slope_whose_interval_excludes_zero_reproduces_its_sign_and_contradicts_the_other() -> None:
    rising = along([10, 12, 15, 17])
    assert judged(trend("rising"), *rising).verdict == R
    assert judged(trend("falling"), *rising).verdict == C
    assert judged(trend("flat"), *rising).verdict == C


def test_a_slope_whose_interval_contains_zero_is_inconclusive() -> None:
    """y 10, 14, 9, 13: slope 0.4, SSR 16.2, se √(8.1/5) = 1.273, ± 5.47: across 0."""
    j = judged(trend("rising"), *along([10, 14, 9, 13]))
    assert j.verdict == N and j.estimates[0].low < 0 < j.estimates[0].high
    assert "contains 0" in j.reason


def test_flat_is_reproduced_when_the_whole_change_stays_within_the_tolerance() -> None:
    """y 100, 101, 100, 101: slope 0.2, SSR 0.8, se √(0.4/5) = 0.283, ± 4.30 × 0.283 = ±1.216; over
    the range 3 that is at most (0.2 + 1.216) × 3 / 100.5 = 4.2 % of the mean, inside 10 % (and not
    inside 4 %)."""
    assert judged(trend("flat"), *along([100, 101, 100, 101])).verdict == R
    tight = finding(trend={"metric": "recovery", "factor": "databases", "sign": "flat", "tolerance": 0.04})
    assert judged(tight, *along([100, 101, 100, 101])).verdict == N


def test_each_trial_is_a_point_of_the_trend() -> None:
    """Two cells of two trials each are four points: a slope with an interval."""
    cells = [
        cell(0, {"databases": 50}, recovery=Reading.of(1.5, 1.0, 2.0, [1.4, 1.6])),
        cell(1, {"databases": 100}, recovery=Reading.of(3.0, 2.5, 3.5, [2.9, 3.1])),
    ]
    j = judged(trend("rising"), *cells)
    assert j.verdict == R and "4 points" in j.reason


# -- limit --------------------------------------------------------------------------------------


def limits(*kinds: str | None) -> list[CellFigures]:
    return [cell(i, {"setup": f"s{i}"}, limit=k) for i, k in enumerate(kinds)]


@pytest.mark.parametrize(
    ("word", "kinds", "verdict"),
    [
        ("cpu", ["cpu", "host cpu", "cpu thread"], R),
        ("disk", ["storage", "storage"], R),
        ("network", ["network round trips", "network bandwidth"], R),
        ("cpu", ["storage", "memory"], C),
        ("cpu", ["cpu", "storage"], N),
        ("cpu", ["cpu", None], N),
        ("cpu", ["cpu", "generator"], N),
    ],
)
def test_a_limit_claim_holds_for_every_cell_fails_for_none_else_is_open(
    word: str, kinds: list[str | None], verdict: Verdict
) -> None:
    assert judged(finding(limit={"kind": word}), *limits(*kinds)).verdict == verdict


def test_never_is_contradicted_by_one_cell_and_reproduced_only_when_every_limit_is_named() -> None:
    never = finding(limit={"kind": "memory", "never": True})
    assert judged(never, *limits("cpu", "storage")).verdict == R
    assert judged(never, *limits("cpu", "memory")).verdict == C
    assert judged(never, *limits("cpu", None)).verdict == N


def test_a_limit_naming_a_resource_must_be_that_resource() -> None:
    cells = [cell(0, {"hosts": 4}, limit="cpu", limit_resource="cpu:processing")]
    f = finding(limit={"kind": "cpu", "resource": "cpu:messagebox"})
    assert judged(f, *cells).verdict == C
    assert judged(finding(limit={"kind": "cpu", "resource": "cpu:processing"}), *cells).verdict == R


# -- rank ---------------------------------------------------------------------------------------


def profiles(*spans: tuple[float, float, float]) -> list[CellFigures]:
    return [cell(i, {"config": f"p{i}"}, capacity=Reading.of(*s)) for i, s in enumerate(spans)]


def rank(*order: str) -> Finding:
    return finding(rank={"metric": "capacity", "factor": "config", "order": list(order)})


def test_an_order_of_separate_intervals_is_reproduced() -> None:
    cells = profiles((100, 90, 110), (200, 180, 220), (300, 280, 320))
    assert judged(rank("p0", "p1", "p2"), *cells).verdict == R


def test_a_separate_pair_the_wrong_way_round_contradicts_the_order() -> None:
    cells = profiles((100, 90, 110), (200, 180, 220), (300, 280, 320))
    j = judged(rank("p0", "p2", "p1"), *cells)
    assert j.verdict == C and "config=p2" in j.reason


def test_overlapping_intervals_are_not_ranked() -> None:
    cells = profiles((100, 90, 110), (105, 95, 115), (300, 280, 320))
    j = judged(rank("p0", "p1", "p2"), *cells)
    assert j.verdict == N and "p0 and p1" in j.reason


# -- success, loss, consolidation ---------------------------------------------------------------


def test_success_counts_the_failovers_that_met_the_recovery_slo() -> None:
    all_met = [cell(0, {"n": 1}, successes=3, failovers=3), cell(1, {"n": 2}, successes=2, failovers=2)]
    assert judged(finding(success={"at_least": 1.0}), *all_met).verdict == R
    one_missed = [cell(0, {"n": 1}, successes=2, failovers=3)]
    j = judged(finding(success={"at_least": 1.0}), *one_missed)
    assert j.verdict == C and "2/3" in j.reason
    assert judged(finding(success={"at_least": 0.6}), *one_missed).verdict == R
    assert judged(finding(success={"at_least": 1.0}), cell(0, {"n": 1})).verdict == N


def test_no_loss_is_judged_from_the_ledger() -> None:
    kept = [
        cell(0, {"sync": "on"}, acknowledged=500, lost=0),
        cell(1, {"sync": "on"}, acknowledged=700, lost=0),
    ]
    j = judged(finding(no_loss=True), *kept)
    assert j.verdict == R and "0 of 1,200" in j.reason
    lost = [*kept, cell(2, {"sync": "off"}, acknowledged=900, lost=9)]
    assert judged(finding(no_loss=True), *lost).verdict == C
    assert judged(finding(no_loss={"cells": {"sync": "on"}}), *lost).verdict == R
    assert judged(finding(no_loss=True), cell(0, {"sync": "on"})).verdict == N


def test_consolidation_ratio_is_judged_with_its_interval() -> None:
    def pair(low: float, high: float) -> Placement:
        return Placement("", {}, "CPU", (low + high) / 2, low, high)

    additive = finding(consolidation={"resource": "cpu", "ratio": [0.9, 1.1]})
    assert judged(additive, placements=(pair(0.95, 1.05),)).verdict == R
    assert judged(additive, placements=(pair(1.2, 1.4),)).verdict == C
    assert judged(additive, placements=(pair(0.85, 1.05),)).verdict == N
    assert judged(additive).verdict == N


def test_a_selection_may_list_several_values_of_a_factor() -> None:
    cells = [
        cell(i, {"setup": s}, limit=k)
        for i, (s, k) in enumerate([("hdd", "storage"), ("split", "storage"), ("ssd", "cpu")])
    ]
    assert judged(finding(limit={"kind": "disk", "cells": {"setup": ["hdd", "split"]}}), *cells).verdict == R
    assert judged(finding(limit={"kind": "disk", "cells": {"setup": ["hdd", "ssd"]}}), *cells).verdict == N


def test_a_rank_of_single_runs_says_it_rests_on_point_values() -> None:
    cells = profiles((100, 100, 100), (200, 200, 200))
    j = judged(rank("p0", "p1"), *cells)
    assert j.verdict == R and "point values" in j.reason


def test_a_divisor_whose_interval_reaches_zero_leaves_the_ratio_unbounded_above() -> None:
    """500 [450, 550] over 100 [0, 200]: from 450/200 = 2.25 up without bound — still wholly above
    1, and wholly outside [0.5, 1.5]; an upper bound it cannot show is open."""
    a = cell(0, {"setup": "ssd"}, capacity=Reading.of(500, 450, 550))
    b = cell(1, {"setup": "hdd"}, capacity=Reading.of(100, 0, 200))
    j = judged(compare(">1", "ssd", "hdd"), a, b)
    assert j.verdict == R and j.estimates[0].low == 2.25 and j.estimates[0].high == float("inf")
    assert "5 [2.25, ∞]" in j.reason
    assert judged(compare([0.5, 1.5], "ssd", "hdd"), a, b).verdict == C
    assert judged(compare("<10", "ssd", "hdd"), a, b).verdict == N


def test_a_software_limit_is_named_once() -> None:
    (software,) = limits("software")
    assert CellFigures(0, "", {}, limit="software", limit_resource="software").limit_text == "software"
    assert CellFigures(0, "", {}, limit="cpu", limit_resource="cpu:db").limit_text == "cpu (cpu:db)"
    assert software.limit_text == "software"
