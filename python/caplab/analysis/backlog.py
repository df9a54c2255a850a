"""The no-backlog check of an open-model trial: did the system keep up with the arrivals?

A backlog is a queue that grows. Over the measured window, the requests that arrived and the
requests still in flight at the window's two ends say it exactly (conservation of requests):

    answered in the window = arrived in the window + in flight at its start − in flight at its end

so the growth of the number in flight is the backlog the window built. Counting only the replies
that came back inside the window, as the check once did, charges every trial with the requests
that were simply on their way at the window's end — λ·W of them by Little's law, all of them
answered a moment later. At 40 msg/s with 95 ms replies and a 3 s window that is 3.8 of 120
messages, 3 % short of 0.99 × offered: a small trial at a low rate failed by one or two messages
whenever latency at the end differed from the start. Those requests are not lost: those the drain
answers carry their latency, which the latency SLO judges.

The number in flight at an instant is itself random (about Poisson with mean λ·W for a stable
queue), so a growth within 2·√(2·(L+1)) — two standard deviations of the difference of two such
counts around a mean level L — is the queue's own noise, not a backlog. Requests the generator
dropped (no connection free) and measured errors are not carried either.

    carried = offered × (1 − (excess growth + dropped + errors) / arrived)

equals the offered rate when the system kept up, and the rate it did sustain when it did not (the
search steps down to it). See DESIGN.md, measurement semantics: the no-backlog check.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from caplab.engine.result import IntervalSnapshot, RunResult


@dataclass(frozen=True)
class Backlog:
    """What the measured window did with its arrivals."""

    arrived: int
    """Requests due in the window: handed to a connection in it, plus dropped at the in-flight cap."""
    in_flight_start: int
    in_flight_end: int
    noise: float
    """The growth of the number in flight that its own randomness explains."""
    dropped: int
    errors: int
    carried_rate: float
    """The offered rate less what the window left behind, per second."""

    @property
    def growth(self) -> int:
        return self.in_flight_end - self.in_flight_start

    @property
    def left_behind(self) -> float:
        """Requests the system did not carry: excess growth, dropped, failed."""
        return max(0.0, self.growth - self.noise) + self.dropped + self.errors

    def describe(self) -> str:
        return (
            f"{self.arrived} arrived, in flight {self.in_flight_start} → {self.in_flight_end}"
            f" (noise ±{self.noise:.0f}), {self.dropped} dropped, {self.errors} failed"
        )


def backlog(result: RunResult) -> Backlog | None:
    """The window's backlog from the interval series; None for a closed-model run, a run without
    an offered rate or without measured intervals (nothing to judge it by)."""
    if result.offered_rate is None or result.model != "open":
        return None
    measured = _window(result)
    if not measured:
        return None
    before = [i for i in result.intervals if i.warmup and i.end_s <= measured[0].start_s + 1e-9]
    start = before[-1].in_flight if before else 0
    end = measured[-1].in_flight
    level = statistics.fmean(i.in_flight for i in [*before[-1:], *measured])
    # Handed to the connections in the window (sent, or waiting for a connection: both are in
    # flight), by conservation, plus those dropped at the in-flight cap.
    arrived = sum(i.completed + i.errors + i.dropped for i in measured) + end - start
    found = Backlog(
        arrived=arrived,
        in_flight_start=start,
        in_flight_end=end,
        noise=2.0 * math.sqrt(2.0 * (level + 1.0)),
        dropped=result.dropped,
        errors=result.errors,
        carried_rate=0.0,
    )
    share = min(found.left_behind / arrived, 1.0) if arrived else 0.0
    return replace(found, carried_rate=result.offered_rate * (1.0 - share))


@dataclass(frozen=True)
class Stall:
    """A stretch of the window in which the system answered (almost) nothing while requests waited:
    a disk flushing its journal, a checkpoint, a throttle's slice used up. Recorded in the trial
    as what it is, so a search does not read one stalled trial as the system's capacity."""

    start_s: float
    end_s: float
    in_flight: int
    """Requests in flight when the stall ended (or the window did)."""

    def describe(self) -> str:
        return (
            f"stalled {self.end_s - self.start_s:.1f} s ({self.start_s:.1f}–{self.end_s:.1f} s into the "
            f"trial): almost no replies while {self.in_flight} requests were in flight"
        )


STALL_SHARE = 0.1
"""An interval that answered under this share of the offered rate, with requests waiting, stalled."""
STALL_MIN_S = 0.5


def longest_stall(result: RunResult) -> Stall | None:
    """The longest run of measured intervals that answered under a tenth of the offered rate while
    requests were in flight, if it lasted half a second or more; None otherwise (or closed model)."""
    rate = result.offered_rate
    if rate is None or result.model != "open" or rate <= 0:
        return None
    spans: list[list[IntervalSnapshot]] = [[]]
    for i in _window(result):
        if i.in_flight > 0 and i.completed + i.errors < STALL_SHARE * rate * (i.end_s - i.start_s):
            spans[-1].append(i)
        elif spans[-1]:
            spans.append([])
    stalls = [
        Stall(s[0].start_s, s[-1].end_s, s[-1].in_flight)
        for s in spans
        if s and s[-1].end_s - s[0].start_s >= STALL_MIN_S - 1e-9
    ]
    return max(stalls, key=lambda s: s.end_s - s.start_s, default=None)


def _window(result: RunResult) -> list[IntervalSnapshot]:
    """The measured intervals. The drain after the window has intervals of its own: the window ends
    with the last one that starts inside it (a search trial is a whole number of intervals long, so
    it ends there)."""
    window_end = result.warmup_s + result.duration_s - 1e-6
    return [i for i in result.intervals if not i.warmup and i.start_s < window_end]
