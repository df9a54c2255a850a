"""A trend claim judged by a fitted slope: least squares of a metric along a numeric factor, its
95 % interval from the residuals (Student's t on n − 2 degrees of freedom).

Each run a cell stored is a point (its replicates, or its failover trials), so a study with
replicates has the residual spread an interval needs even at three levels of the factor; a cell
with one figure is one point. Rising or falling is reproduced when the slope's interval excludes
0 on the claimed side and contradicted on the other; flat when the change across the factor's range
stays within ``tolerance`` of the mean for the whole interval.
"""

from __future__ import annotations

import statistics

from caplab.analysis.finding_types import (
    CellFigures,
    Estimate,
    Evidence,
    Verdict,
    cell_evidence,
    reading_of,
)
from caplab.analysis.line_fit import fit_line
from caplab.analysis.replicates import t_quantile
from caplab.grammar.findings import TrendClaim


def slope_interval(points: list[tuple[float, float]]) -> Estimate | None:
    """The least-squares slope of y on x with its 95 % interval; None under three points or with
    a single x (no slope, or no residual to size its interval)."""
    line = fit_line([x for x, _ in points], [y for _, y in points])
    if line is None or line.slope_stderr is None:
        return None
    half = t_quantile(line.points - 2) * line.slope_stderr
    return Estimate("slope", line.slope, line.slope - half, line.slope + half)


def judge_trend(
    j: TrendClaim, cells: list[CellFigures]
) -> tuple[Verdict, str, list[Evidence], list[Estimate]]:
    points: list[tuple[float, float]] = []
    figures: list[Evidence] = []
    for cell in sorted(cells, key=lambda c: _x(c, j.factor) or 0.0):
        reading, x = reading_of(cell, j.metric, j.phase), _x(cell, j.factor)
        if reading is None or x is None:
            continue
        figures.append(cell_evidence(cell, reading))
        points += [(x, y) for y in (reading.samples or (reading.value,))]
    slope = slope_interval(points)
    if slope is None:
        return (
            Verdict.INCONCLUSIVE,
            f"{len(points)} points of {j.metric}: too few for a slope's interval",
            figures,
            [],
        )
    per = f"{j.metric} per unit of {j.factor}"
    said = f"slope {slope.text()} {per} over {len(points)} points"
    if j.sign == "flat":
        return _flat(j, points, slope, said), said, figures, [slope]
    rising = j.sign == "rising"
    if (slope.low > 0) if rising else (slope.high < 0):
        return Verdict.REPRODUCED, f"{said}: {j.sign}", figures, [slope]
    if (slope.high < 0) if rising else (slope.low > 0):
        return Verdict.CONTRADICTED, f"{said}: {'falling' if rising else 'rising'}", figures, [slope]
    return Verdict.INCONCLUSIVE, f"{said}: its interval contains 0", figures, [slope]


def _flat(j: TrendClaim, points: list[tuple[float, float]], slope: Estimate, said: str) -> Verdict:
    """The change the slope makes across the factor's range, as a share of the mean, against the
    tolerance: within it for the whole interval, or beyond it for the whole interval."""
    xs = [x for x, _ in points]
    mean = abs(statistics.fmean(y for _, y in points))
    if mean == 0:
        return Verdict.INCONCLUSIVE
    span = max(xs) - min(xs)
    low, high = slope.low * span / mean, slope.high * span / mean
    if -j.tolerance <= low and high <= j.tolerance:
        return Verdict.REPRODUCED
    if low > j.tolerance or high < -j.tolerance:
        return Verdict.CONTRADICTED
    return Verdict.INCONCLUSIVE


def _x(cell: CellFigures, factor: str) -> float | None:
    value = cell.factors.get(factor)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


__all__ = ["judge_trend", "slope_interval"]
