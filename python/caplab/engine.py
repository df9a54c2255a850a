"""The Python face of the load engine: typed plans in, typed results out.

A plan is plain data (dataclasses); the Rust engine validates it again and names the field when
something is wrong. The run releases the GIL; interval snapshots stream to an optional callback.
Ctrl-C stops the run and returns what was measured, with ``interrupted`` set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from caplab import _engine
from caplab._engine import PlanError, TargetUnreachable, WorkerFailed

__all__ = [
    "ClosedLoad",
    "GeneratorFigures",
    "IntervalSnapshot",
    "LatencySummary",
    "OpenLoad",
    "Plan",
    "PlanError",
    "RequestClass",
    "RunResult",
    "Segment",
    "Target",
    "TargetUnreachable",
    "Think",
    "WorkerFailed",
    "merge_histograms",
    "run",
    "summarize_histogram",
]

Framing = Literal["line", "u32", "mllp"]


@dataclass(frozen=True)
class Target:
    """``http://host:port/path`` or ``tcp://host:port`` (TCP needs a framing)."""

    url: str
    framing: Framing | None = None


@dataclass(frozen=True)
class RequestClass:
    """One kind of request in the mix; the engine keeps statistics per class."""

    name: str = "default"
    weight: float = 1.0
    method: str = "GET"
    path: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    template: bool = False
    """Replace ``{seq}`` in the body with a per-request sequence number."""


@dataclass(frozen=True)
class Segment:
    """A stretch of the rate profile over which the rate moves linearly."""

    duration_s: float
    rate_start: float
    rate_end: float


@dataclass(frozen=True)
class OpenLoad:
    """Arrival-rate load: sends follow the schedule whatever the replies do."""

    profile: tuple[Segment, ...]
    arrivals: Literal["constant", "poisson"] = "constant"

    @staticmethod
    def constant(
        rate: float, duration_s: float, arrivals: Literal["constant", "poisson"] = "constant"
    ) -> OpenLoad:
        return OpenLoad((Segment(duration_s, rate, rate),), arrivals)

    @staticmethod
    def ramp(start: float, end: float, duration_s: float) -> OpenLoad:
        return OpenLoad((Segment(duration_s, start, end),))

    @staticmethod
    def steps(steps: list[tuple[float, float]]) -> OpenLoad:
        """``[(rate, seconds), …]``: a staircase of constant rates."""
        return OpenLoad(tuple(Segment(d, r, r) for r, d in steps))

    @property
    def duration_s(self) -> float:
        return sum(s.duration_s for s in self.profile)


@dataclass(frozen=True)
class Think:
    kind: Literal["none", "constant", "exponential"] = "none"
    mean_s: float = 0.0


@dataclass(frozen=True)
class ClosedLoad:
    """A fixed population of users: send, wait for the reply, think, repeat."""

    users: int
    think: Think = field(default_factory=Think)


@dataclass(frozen=True)
class Plan:
    target: Target
    load: OpenLoad | ClosedLoad
    duration_s: float
    warmup_s: float = 0.0
    requests: tuple[RequestClass, ...] = (RequestClass(),)
    max_requests: int | None = None
    max_in_flight: int | None = None
    interval_s: float = 1.0
    threads: int | None = None
    timeout_s: float = 30.0
    saturation_lateness_ms: float = 20.0
    seed: int = 0

    def to_json(self) -> str:
        """The engine's wire form (see engine/src/plan.rs)."""
        data = asdict(self)
        data["target"] = {k: v for k, v in data["target"].items() if v is not None}
        if isinstance(self.load, OpenLoad):
            data["load"] = {
                "model": "open",
                "arrivals": self.load.arrivals,
                "profile": data["load"]["profile"],
            }
        else:
            think: dict[str, Any] = {"kind": self.load.think.kind}
            if self.load.think.kind != "none":
                think["mean_s"] = self.load.think.mean_s
            data["load"] = {"model": "closed", "users": self.load.users, "think": think}
        for r in data["requests"]:
            r["headers"] = [list(h) for h in r["headers"]]
        return json.dumps(data)


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds. A percentile is None when the sample is too small to support it."""

    count: int
    min: float | None
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None

    @staticmethod
    def from_dict(d: dict[str, Any]) -> LatencySummary:
        return LatencySummary(**d)


@dataclass(frozen=True)
class IntervalSnapshot:
    index: int
    start_s: float
    end_s: float
    warmup: bool
    sent: int
    completed: int
    errors: int
    dropped: int
    in_flight: int
    throughput: float
    latency_ms: LatencySummary

    @staticmethod
    def from_dict(d: dict[str, Any]) -> IntervalSnapshot:
        return IntervalSnapshot(**{**d, "latency_ms": LatencySummary.from_dict(d["latency_ms"])})


@dataclass(frozen=True)
class GeneratorFigures:
    threads: int
    cpu_s: float
    cpu_us_per_request: float | None
    lateness_p99_ms: float | None
    lateness_max_ms: float | None
    busiest_thread: float
    connections_opened: int
    saturated: bool
    saturation_reason: str | None
    held_rate: float | None = None
    """Open model: requests per second that actually left in the measured window."""


@dataclass(frozen=True)
class RunResult:
    """One trial's measurements. ``raw`` keeps the engine's JSON object, histograms included."""

    model: Literal["open", "closed"]
    offered_rate: float | None
    users: int | None
    duration_s: float
    warmup_s: float
    sent: int
    completed: int
    errors: int
    dropped: int
    in_flight_at_end: int
    throughput: float
    latency_ms: LatencySummary
    service_time_ms: LatencySummary
    errors_by_kind: dict[str, int]
    intervals: list[IntervalSnapshot]
    generator: GeneratorFigures
    max_in_flight: int | None
    interrupted: bool
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def latency_hdr(self) -> str:
        """All classes' latency histogram, HdrHistogram V2 (base64)."""
        return str(self.raw["latency_hdr"])

    @staticmethod
    def from_json(text: str) -> RunResult:
        d = json.loads(text)
        return RunResult(
            model=d["model"],
            offered_rate=d["offered_rate"],
            users=d["users"],
            duration_s=d["duration_s"],
            warmup_s=d["warmup_s"],
            sent=d["sent"],
            completed=d["completed"],
            errors=d["errors"],
            dropped=d["dropped"],
            in_flight_at_end=d["in_flight_at_end"],
            throughput=d["throughput"],
            latency_ms=LatencySummary.from_dict(d["latency_ms"]),
            service_time_ms=LatencySummary.from_dict(d["service_time_ms"]),
            errors_by_kind=dict(d["errors_by_kind"]),
            intervals=[IntervalSnapshot.from_dict(i) for i in d["intervals"]],
            generator=GeneratorFigures(**d["generator"]),
            max_in_flight=d["max_in_flight"],
            interrupted=d["interrupted"],
            raw=d,
        )


def run(plan: Plan, on_interval: Callable[[IntervalSnapshot], bool | None] | None = None) -> RunResult:
    """Runs one trial. Raises PlanError (bad plan), TargetUnreachable (nothing listening) or
    WorkerFailed (a generator thread failed, so the counts would be incomplete).

    ``on_interval`` sees every interval snapshot; returning False stops the run early (the result
    is kept, with ``interrupted`` set), as Ctrl-C does."""
    callback = None
    if on_interval is not None:
        sink = on_interval

        def callback(text: str) -> bool | None:
            return sink(IntervalSnapshot.from_dict(json.loads(text)))

    return RunResult.from_json(_engine.run_plan(plan.to_json(), callback))


def merge_histograms(encoded: list[str]) -> str:
    """Merges V2-encoded histograms (from threads, trials or machines) into one."""
    return _engine.merge_histograms(encoded)


def summarize_histogram(encoded: str) -> LatencySummary:
    return LatencySummary.from_dict(json.loads(_engine.summarize_histogram(encoded)))
