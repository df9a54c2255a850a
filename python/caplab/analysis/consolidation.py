"""Consolidation: does one combined server use what its single-role servers used, added up?

The Exchange paper's test 2 measured a client-access server and a transport server apart, then
one server with both roles, under the same load, and set the sum of the parts (the prediction)
beside the combined server (the measurement): "CPU predicted 53 %, actual 53 %; memory predicted
6,153 MB, actual 5,069 MB". Here each trial of each placement gives one figure per resource; the
ratio actual / predicted gets an interval from the trials' spread (the delta method on the log of
the ratio, Student's t), and a verdict: additive when the ratio is within ±10 % or its interval
contains 1, sub-additive when the combined server needs clearly less (shared libraries, caches,
one process image), super-additive when clearly more (contention between the roles).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from caplab.analysis.replicates import T95

ADDITIVE_BAND = 0.10
"""A ratio within this of 1 is additive whatever its interval."""


@dataclass(frozen=True)
class Comparison:
    resource: str
    unit: str
    predicted: float
    """The sum of the roles' use apart, mean over trials."""
    actual: float
    """The roles' use together, mean over trials."""
    ratio: float | None
    interval: tuple[float, float] | None
    verdict: str
    trials_apart: int
    trials_together: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(resource: str, unit: str, apart: list[float], together: list[float]) -> Comparison:
    """Per-trial totals apart (each the sum of the roles' figures) against together."""
    predicted = statistics.fmean(apart) if apart else 0.0
    actual = statistics.fmean(together) if together else 0.0
    ratio = actual / predicted if predicted > 0 else None
    interval = _ratio_interval(apart, together) if ratio is not None else None
    return Comparison(
        resource,
        unit,
        predicted,
        actual,
        ratio,
        interval,
        _verdict(ratio, interval),
        len(apart),
        len(together),
    )


def _ratio_interval(apart: list[float], together: list[float]) -> tuple[float, float] | None:
    """95 % interval of mean(together) / mean(apart): log-ratio, delta method, t on the fewer trials."""
    if len(apart) < 2 or len(together) < 2:
        return None
    a, t = statistics.fmean(apart), statistics.fmean(together)
    if a <= 0 or t <= 0:
        return None
    se = math.sqrt(
        statistics.variance(apart) / (len(apart) * a * a)
        + statistics.variance(together) / (len(together) * t * t)
    )
    df = min(len(apart), len(together)) - 1
    half = T95.get(df, 1.96) * se
    log_ratio = math.log(t / a)
    return (math.exp(log_ratio - half), math.exp(log_ratio + half))


def _verdict(ratio: float | None, interval: tuple[float, float] | None) -> str:
    if ratio is None:
        return "not measured"
    if abs(ratio - 1) <= ADDITIVE_BAND or (interval is not None and interval[0] <= 1 <= interval[1]):
        return "additive"
    return "sub-additive" if ratio < 1 else "super-additive"


def comparison_line(c: Comparison) -> str:
    """``CPU predicted 53 %, actual 53 % (ratio 1.00 [0.95, 1.05]): additive``."""
    shown = "" if c.ratio is None else f" (ratio {c.ratio:.2f}"
    if c.interval is not None:
        shown += f" [{c.interval[0]:.2f}, {c.interval[1]:.2f}]"
    shown += ")" if c.ratio is not None else ""
    figures = f"predicted {c.predicted:,.0f} {c.unit}, actual {c.actual:,.0f} {c.unit}"
    return f"{c.resource} {figures}{shown}: {c.verdict}"
