"""Intervals from replicates, and when two configurations cannot be told apart.

Run-to-run variation on a shared machine is larger than trial-to-trial variation inside one
search (the same cell searched twice gave 1,797/s and 1,314/s). An interval a decision rests on
therefore comes from replicates — the whole search repeated with a fresh start of the system — as
a Student-t interval of their mean; configurations whose intervals overlap are not ranked.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
"""Two-sided 95 % Student-t quantiles by degrees of freedom; 1.96 past the table's end is close
enough (the table runs to 10, and more than 11 replicates is rare)."""


@dataclass(frozen=True)
class Estimate:
    """A mean and its 95 % interval, with what the interval is made of."""

    mean: float
    low: float
    high: float
    n: int


def t_quantile(df: int) -> float:
    return T95.get(df, 1.96)


def t_interval(values: list[float]) -> Estimate:
    """The mean of ``values`` with its 95 % t-interval; a single value is its own interval."""
    if not values:
        raise ValueError("no values to estimate from")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Estimate(mean, mean, mean, 1)
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Estimate(mean, max(0.0, mean - half), mean + half, len(values))


def within_resolution(estimate: Estimate, brackets: list[tuple[float, float]]) -> Estimate:
    """``estimate`` widened, where it is narrower, to the mean of the replicates' own search
    brackets. Each search locates its capacity only within its bracket (the confirmed load up to
    the lowest that failed), so the mean of the true capacities lies within the mean of the
    brackets: replicates that land on the same step of the search agree to that step, not to
    zero, and their t-interval alone (of width zero) would claim a precision no search had."""
    if len(brackets) != estimate.n or not brackets:
        return estimate
    low = statistics.fmean(b[0] for b in brackets)
    high = statistics.fmean(b[1] for b in brackets)
    return Estimate(estimate.mean, min(estimate.low, low), max(estimate.high, high), estimate.n)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals share any value: their difference is within the noise."""
    return a[0] <= b[1] and b[0] <= a[1]
