"""What each action of a mix did at capacity, and what the users offered against what they got.

A usage profile's search reports more than a user count: each action's completions per second,
errors and latency over the confirmation trials at capacity (histograms merged, never percentiles
averaged), and the actions per user-second the profile offered beside those the users reached —
the gap is the think-time approximation (a reply's time is added to each user's cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

from caplab.engine import RunResult, UsageAction, merge_histograms, summarize_histogram
from caplab.json_types import JsonDict

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class ActionFigures:
    """One action over the trials at capacity: counts summed, rates per second of measured time."""

    name: str
    completed: int
    errors: int
    per_s: float
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    p95_ms: float | None = None
    """Last, with a default: answers stored before p95 was measured read as None."""

    def to_dict(self) -> JsonDict:
        return dict(self.__dict__)


def action_figures(results: list[RunResult]) -> list[ActionFigures]:
    """Each request class's figures over ``results`` (trials of the same plan), in plan order."""
    measured = sum(r.duration_s for r in results)
    if not results or measured <= 0:
        return []
    out = []
    for i, first in enumerate(results[0].classes):
        classes = [r.classes[i] for r in results if i < len(r.classes)]
        latency = summarize_histogram(merge_histograms([c.latency_hdr for c in classes]))
        completed = sum(c.completed for c in classes)
        out.append(
            ActionFigures(
                first.name,
                completed,
                sum(c.errors for c in classes),
                completed / measured,
                latency.p50,
                latency.p90,
                latency.p99,
                p95_ms=latency.p95,
            )
        )
    return out


@dataclass(frozen=True)
class PerUser:
    """Actions per user-second: what the usage profile offered and what the users reached."""

    offered: float
    achieved: float

    def to_dict(self) -> JsonDict:
        return {
            "offered_per_s": self.offered,
            "offered_per_hour": self.offered * SECONDS_PER_HOUR,
            "achieved_per_s": self.achieved,
            "achieved_per_hour": self.achieved * SECONDS_PER_HOUR,
        }


def per_user(usage: tuple[UsageAction, ...], results: list[RunResult]) -> PerUser | None:
    """The profile's offered actions per user-second against those completed per user over the
    trials (each trial's throughput over its users, weighted by its measured time)."""
    measured = sum(r.duration_s for r in results)
    if not results or measured <= 0:
        return None
    achieved = sum(r.throughput / r.users * r.duration_s for r in results if r.users) / measured
    return PerUser(sum(a.per_hour for a in usage) / SECONDS_PER_HOUR, achieved)
