"""A straight line through points by least squares, with its slope's standard error: the one fit
behind a steady window's drift (analysis/steady.py), a job's rate against size
(analysis/size_fit.py) and a trend finding's slope interval (analysis/finding_trend.py)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    intercept: float
    slope: float
    slope_stderr: float | None
    """From the residuals on n − 2 degrees of freedom; None under three points."""
    points: int


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Line | None:
    """y = intercept + slope · x over the points; None without points or with a single x (no slope
    to fit)."""
    n = len(xs)
    if n == 0:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    if n < 3:
        return Line(intercept, slope, None, n)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return Line(intercept, slope, math.sqrt(residual / (n - 2) / sxx), n)
