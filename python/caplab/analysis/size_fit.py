"""How a batch job's rate changes with its size: the MIIS paper's "staging 278, 243, 217, 173, 139
objects/s for 10,000 … 500,000 objects" asks for a shape, not a scalability law — there is one
machine, and the question is how fast the rate falls as the work grows.

Two shapes are fitted by least squares: linear in N (rate = a + b·N) and a power law
(rate = c·N^k, fitted on the logarithms), each with its R² on the rates themselves; the better one
is named. Points that break the trend (a rate going the other way between two sizes, like the
paper's unexplained dip at 50,000) are flagged rather than smoothed over.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from caplab.analysis.line_fit import fit_line


@dataclass(frozen=True)
class SizeFit:
    model: str
    """``linear`` or ``power``."""
    params: dict[str, float]
    r2: float
    other_r2: float
    """The R² of the shape not chosen."""
    trend: str
    """``falling``, ``rising`` or ``flat``: the sign of the fit's slope."""
    against_trend: list[float]
    """Sizes whose rate moved against the trend from the size before."""
    description: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _least_squares(xs: list[float], ys: list[float]) -> tuple[float, float]:
    line = fit_line(xs, ys)
    return (line.intercept, line.slope) if line else (statistics.fmean(ys), 0.0)


def _r2(ys: list[float], predicted: list[float]) -> float:
    mean = sum(ys) / len(ys)
    total = sum((y - mean) ** 2 for y in ys)
    residual = sum((y - p) ** 2 for y, p in zip(ys, predicted, strict=True))
    return 1.0 - residual / total if total > 0 else 1.0


def fit_size(given: Sequence[tuple[float, float]]) -> SizeFit | None:
    """``(size, rate)`` points, at least three sizes with positive rates; None otherwise."""
    points = sorted((float(n), float(r)) for n, r in given if n > 0 and r > 0)
    if len({n for n, _ in points}) < 3:
        return None
    ns, rates = [n for n, _ in points], [r for _, r in points]
    a, b = _least_squares(ns, rates)
    linear_r2 = _r2(rates, [a + b * n for n in ns])
    log_c, k = _least_squares([math.log(n) for n in ns], [math.log(r) for r in rates])
    c = math.exp(log_c)
    power_r2 = _r2(rates, [c * n**k for n in ns])
    slope = k if power_r2 >= linear_r2 else b
    trend = "flat" if abs(slope) < 1e-12 else "falling" if slope < 0 else "rising"
    against = [
        n2
        for (n1, r1), (n2, r2) in itertools.pairwise(points)
        if n2 > n1 and ((trend == "falling" and r2 > r1) or (trend == "rising" and r2 < r1))
    ]
    if power_r2 >= linear_r2:
        doubling = 2**k
        shape = f"rate ≈ {c:,.4g}·N^{k:.3f} (R² {power_r2:.2f})"
        description = f"power law: {shape}; doubling N multiplies the rate by {doubling:.2f}"
        return SizeFit("power", {"c": c, "k": k}, power_r2, linear_r2, trend, against, description)
    description = f"linear: rate ≈ {a:,.4g} {'+' if b >= 0 else '−'} {abs(b):.4g}·N (R² {linear_r2:.2f})"
    return SizeFit("linear", {"a": a, "b": b}, linear_r2, power_r2, trend, against, description)
