"""Recovery from a fault, read from a trial's interval series: how long the load was disturbed,
what failed meanwhile, and whether throughput came back to where it was.

The series is the load's own view (completions and errors per interval, on the engine's clock), so
recovery is what a client saw, not what the system says about itself. Its resolution is the
interval width: every time here is good to ± one interval.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

RECOVERED_SHARE = 0.9
"""An interval is back to normal when it has no errors and at least this share of the throughput
before the fault."""
SETTLE_INTERVALS = 2
"""Recovered means this many normal intervals in a row: one good interval between two bad ones is
not a recovery."""


@dataclass(frozen=True)
class Interval:
    start_s: float
    end_s: float
    completed: int
    errors: int
    warmup: bool = False

    @property
    def throughput(self) -> float:
        width = self.end_s - self.start_s
        return self.completed / width if width > 0 else 0.0


@dataclass(frozen=True)
class Recovery:
    fault_s: float
    """When the action started, from the load's start."""
    before_rps: float | None
    disrupted: bool
    """Whether any interval after the fault had errors or fell below the recovered share."""
    recovery_s: float | None
    """Fault → the start of the first settled run of normal intervals after the outage (the first
    interval with errors or no completion, else the first below normal); 0 when nothing was
    disrupted, None when the load never recovered before the trial ended."""
    unavailable_s: float
    """Time in intervals after the fault with no completion at all: the outage as clients saw it."""
    failed: int
    """Requests that failed from the fault until recovery (until the end if it never came)."""
    after_rps: float | None
    """Mean throughput after recovery to the end of the trial, once the requests held through the
    outage have drained."""
    after_ratio: float | None
    resolution_s: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def recovery(intervals: list[Interval], fault_s: float) -> Recovery:
    """How the load came through a fault at ``fault_s`` (see the module docstring)."""
    ordered = sorted(intervals, key=lambda i: i.start_s)
    widths = [i.end_s - i.start_s for i in ordered if i.end_s > i.start_s]
    resolution = max(widths) if widths else 0.0
    before_all = [i for i in ordered if i.end_s <= fault_s]
    before = [i for i in before_all if not i.warmup] or before_all[1:] or before_all
    before_rps = sum(i.throughput for i in before) / len(before) if before else None
    after = [i for i in ordered if i.end_s > fault_s]

    def normal(i: Interval) -> bool:
        return i.errors == 0 and (before_rps is None or i.throughput >= RECOVERED_SHARE * before_rps)

    first_bad = next((k for k, i in enumerate(after) if not normal(i)), None)
    if first_bad is None:
        rest = _mean_rps(after)
        return Recovery(fault_s, before_rps, False, 0.0, 0.0, 0, rest, _ratio(rest, before_rps), resolution)
    # A dip before the outage proper is not its end: before a switchover's demotion stops commits,
    # its checkpoint slows them, and two normal intervals after that dip read as "recovered" 3 s
    # before the outage began (seen at 50 databases). Where requests failed or nothing completed,
    # the load has settled only after the first such interval.
    first_down = next((k for k, i in enumerate(after) if i.errors or not i.completed), None)
    settled = next(
        (
            k
            for k in range(first_bad if first_down is None else first_down, len(after) - SETTLE_INTERVALS + 1)
            if all(normal(i) for i in after[k : k + SETTLE_INTERVALS])
        ),
        None,
    )
    disturbed = after[:settled] if settled is not None else after
    unavailable = sum(i.end_s - max(i.start_s, fault_s) for i in disturbed if i.completed == 0)
    failed = sum(i.errors for i in disturbed)
    if settled is None:
        return Recovery(fault_s, before_rps, True, None, unavailable, failed, None, None, resolution)
    back = after[settled:]
    # Requests held through the outage complete in a burst as it ends: the rate the system came
    # back to is read after that catch-up, not averaged with it.
    ceiling = before_rps / RECOVERED_SHARE if before_rps else None
    catching_up = next(
        (k for k, i in enumerate(back) if ceiling is None or i.throughput <= ceiling), len(back)
    )
    rest = _mean_rps(back[catching_up:])
    return Recovery(
        fault_s,
        before_rps,
        True,
        max(0.0, back[0].start_s - fault_s),
        unavailable,
        failed,
        rest,
        _ratio(rest, before_rps),
        resolution,
    )


def _mean_rps(intervals: list[Interval]) -> float | None:
    return sum(i.throughput for i in intervals) / len(intervals) if intervals else None


def _ratio(after: float | None, before: float | None) -> float | None:
    return after / before if after is not None and before else None


def recovery_line(r: Recovery) -> str:
    """One line: what a reader asks first about a failover."""
    if not r.disrupted:
        return f"no disruption seen (± {r.resolution_s:g}s)"
    back = (
        f"recovered after {r.recovery_s:.1f}s (± {r.resolution_s:g}s)"
        if r.recovery_s is not None
        else "not recovered by the end of the trial"
    )
    ratio = f", throughput after {r.after_ratio:.0%} of before" if r.after_ratio is not None else ""
    return f"{back}; {r.unavailable_s:.1f}s with no completion, {r.failed:,} requests failed{ratio}"
