"""What a run returns: totals, latency summaries, the interval series, per-target and
per-class figures, the generator's own. Plain data read from the engine's JSON; analysis reads
these types and nothing else of the engine."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds. A percentile is None when the sample is too small to support it (p95 needs
    20 samples, p99 100). ``p95`` comes last, with a default, so summaries written before the
    engine gave it (stored results, older load agents) still read, as None."""

    count: int
    min: float | None
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None
    p95: float | None = None

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
class TargetInterval:
    """One target's completions and errors in one interval of the run's interval clock (the
    same start and end as the run's ``intervals``, warm-up included)."""

    start_s: float
    end_s: float
    completed: int
    errors: int


@dataclass(frozen=True)
class TargetSeries:
    """One target's share of a run over several: measured totals (they sum to the run's) and its
    interval series, from which a target's recovery after a fault is read."""

    label: str
    """The target's URL without any password."""
    completed: int
    errors: int
    intervals: tuple[TargetInterval, ...]

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TargetSeries:
        return TargetSeries(
            label=d["label"],
            completed=d["completed"],
            errors=d["errors"],
            intervals=tuple(TargetInterval(**i) for i in d["intervals"]),
        )


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
    tls_handshakes: int | None = None
    """TLS targets: handshakes completed in the measured window, full and resumed; else None."""
    tls_resumed: int | None = None
    """Of ``tls_handshakes``, those that resumed a session the server gave earlier (cheaper)."""
    tls_handshakes_per_s: float | None = None
    """``tls_handshakes`` per second of the measured window: one per request without keep-alive."""


@dataclass(frozen=True)
class ClassFigures:
    """One request class's (a usage profile's action's) share of a run: counts and latency."""

    name: str
    sent: int
    completed: int
    errors: int
    latency_ms: LatencySummary
    service_time_ms: LatencySummary
    latency_hdr: str = field(repr=False)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ClassFigures:
        return ClassFigures(
            name=d["name"],
            sent=d["sent"],
            completed=d["completed"],
            errors=d["errors"],
            latency_ms=LatencySummary.from_dict(d["latency_ms"]),
            service_time_ms=LatencySummary.from_dict(d["service_time_ms"]),
            latency_hdr=d["latency_hdr"],
        )


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
    error_samples: dict[str, str] = field(default_factory=dict)
    """For each kind in ``errors_by_kind``, the first words a driver gave for it (a PostgreSQL
    server's message for ``sql:42``), where the driver keeps them."""
    per_target: tuple[TargetSeries, ...] = ()
    """With several targets, each one's counts and interval series in plan order; else empty."""

    @property
    def latency_hdr(self) -> str:
        """All classes' latency histogram, HdrHistogram V2 (base64)."""
        return str(self.raw["latency_hdr"])

    @property
    def steps(self) -> dict[str, LatencySummary]:
        """Mail targets: each session step's latency over the measured requests (SMTP connect,
        auth, envelope, data; IMAP connect, login, select, fetch), in the order they first ran;
        empty for the other drivers."""
        return {s["name"]: LatencySummary.from_dict(s["latency_ms"]) for s in self.raw.get("steps", [])}

    @property
    def classes(self) -> tuple[ClassFigures, ...]:
        """Each request class's figures, in plan order (a usage profile's actions)."""
        return tuple(ClassFigures.from_dict(c) for c in self.raw.get("classes", []))

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
            error_samples=dict(d.get("error_samples", {})),
            per_target=tuple(TargetSeries.from_dict(t) for t in d.get("per_target", [])),
        )
