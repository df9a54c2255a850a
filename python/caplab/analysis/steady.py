"""Steady state and consistency, from a trial's interval series (warm-up excluded).

A trial is accepted as a measurement only if neither throughput nor latency trends through its
window: a queue that is still growing passes a short trial's percentile but fails a long one.
Consistency is the Connexion paper's Good/Fair column made a number: the coefficient of variation
of per-interval throughput. Little's law (in flight ≈ throughput × latency) is checked as a sanity
test of the measurement itself.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Literal, TypedDict

from caplab.analysis.line_fit import Line, fit_line
from caplab.engine.result import IntervalSnapshot

Rating = Literal["good", "fair", "poor"]

GOOD_CV = 0.05
FAIR_CV = 0.15
# Over the window, a fitted rise of this fraction of the mean counts as a trend.
THROUGHPUT_TREND = 0.10
LATENCY_TREND = 0.50
# …and by at least this much in absolute terms: a 1 → 2 ms wobble is noise, not a growing queue.
LATENCY_TREND_MIN_MS = 5.0
MIN_INTERVALS = 3


@dataclass(frozen=True)
class Steadiness:
    steady: bool
    reason: str
    consistency: Rating
    throughput_cv: float
    throughput_trend: float
    latency_trend: float


def _line(ys: list[float]) -> Line | None:
    """The line through the intervals' values, one unit of x per interval."""
    return fit_line(range(len(ys)), ys)


def _slope(ys: list[float]) -> float:
    line = _line(ys)
    return line.slope if line else 0.0


def _significant(ys: list[float]) -> bool:
    """The slope is more than twice its standard error: a trend, not a random walk's wobble."""
    line = _line(ys) if len(ys) >= MIN_INTERVALS else None
    if line is None or line.slope_stderr is None:
        return False
    return line.slope_stderr == 0 or abs(line.slope) > 2 * line.slope_stderr


def _sends_are_the_loads(window: list[IntervalSnapshot], users: int | None) -> bool:
    """Whether the sends are the load's own (a schedule, or users who spend most of their cycle
    thinking) rather than each reply's echo (closed users mostly waiting on the system)."""
    if users is None:
        return True
    return users > 0 and statistics.fmean(i.in_flight for i in window) < 0.5 * users


def _trend(ys: list[float]) -> float:
    """The fitted change over the whole window, as a fraction of the mean."""
    mean = statistics.fmean(ys)
    return _slope(ys) * (len(ys) - 1) / mean if mean > 0 else 0.0


def rate(cv: float) -> Rating:
    return "good" if cv < GOOD_CV else "fair" if cv < FAIR_CV else "poor"


def measured(intervals: list[IntervalSnapshot], window_end_s: float | None = None) -> list[IntervalSnapshot]:
    """Whole intervals after the warm-up and inside the window: the drain after it and a short final
    interval would read as a dip."""
    end = window_end_s + 1e-3 if window_end_s is not None else float("inf")
    full = [i for i in intervals if not i.warmup and i.end_s <= end]
    if len(full) > 1:
        length = full[0].end_s - full[0].start_s
        full = [i for i in full if i.end_s - i.start_s >= 0.9 * length]
    return full


def steadiness(
    intervals: list[IntervalSnapshot], window_end_s: float | None = None, users: int | None = None
) -> Steadiness:
    """``window_end_s``: warm-up + duration, in the intervals' time (seconds from the run start);
    ``users``: a closed model's population (None: an open model's schedule).

    A trend in throughput is the system's only where the sends did not carry it: Poisson arrivals
    — a schedule's, or those of users who mostly think — wander, and a trial's one realisation
    may rise 15 % across its window with the system keeping pace throughout. Where the sends are
    the load's own, the throughput is judged against them; where they echo the replies (closed
    users who mostly wait), the throughput's own trend is the system's."""
    window = measured(intervals, window_end_s)
    if len(window) < MIN_INTERVALS:
        return Steadiness(True, f"too few intervals ({len(window)}) to judge a trend", "fair", 0.0, 0.0, 0.0)
    tput = [i.throughput for i in window]
    mean = statistics.fmean(tput)
    cv = statistics.stdev(tput) / mean if mean > 0 else 0.0
    t_trend = _trend(tput)
    p50 = [i.latency_ms.p50 for i in window if i.latency_ms.p50 is not None]
    l_trend = _trend(p50) if len(p50) >= MIN_INTERVALS else 0.0
    l_rise_ms = l_trend * statistics.fmean(p50) if p50 else 0.0
    reasons = []
    if abs(t_trend) > THROUGHPUT_TREND and _significant(tput):
        if _sends_are_the_loads(window, users):
            sends = [i.sent / (i.end_s - i.start_s) for i in window]
            lag = [t - s for t, s in zip(tput, sends, strict=True)]
            drift = _slope(lag) * (len(lag) - 1) / mean if mean > 0 else 0.0
            if abs(drift) > THROUGHPUT_TREND and _significant(lag):
                reasons.append(
                    f"throughput trends {t_trend:+.0%} across the window, {drift:+.0%} beyond its sends'"
                )
        else:
            reasons.append(f"throughput trends {t_trend:+.0%} across the window")
    if l_trend > LATENCY_TREND and l_rise_ms > LATENCY_TREND_MIN_MS and _significant(p50):
        reasons.append(
            f"median latency climbs {l_trend:+.0%} ({l_rise_ms:+.1f} ms) through the window: "
            "a queue is growing"
        )
    steady = not reasons
    return Steadiness(steady, "; ".join(reasons) or "steady", rate(cv), cv, t_trend, l_trend)


class LittlesLaw(TypedDict, total=False):
    """In flight against throughput × mean latency; only ``checked`` when there was nothing to check."""

    checked: bool
    in_flight: float | None
    expected: float | None
    holds: bool


def littles_law(
    throughput: float, mean_latency_ms: float | None, intervals: list[IntervalSnapshot], window_end_s: float
) -> LittlesLaw:
    """Compares the in-flight count the engine saw with throughput × mean latency."""
    window = measured(intervals, window_end_s)
    if not window or mean_latency_ms is None:
        return {"checked": False}
    observed = statistics.fmean(i.in_flight for i in window)
    expected = throughput * mean_latency_ms / 1000.0
    # In-flight is sampled once per interval, so small populations are noisy: allow ±1 plus 50 %.
    ok = abs(observed - expected) <= max(1.0, 0.5 * expected)
    return {"checked": True, "in_flight": observed, "expected": expected, "holds": ok}
