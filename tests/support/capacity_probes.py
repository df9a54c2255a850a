"""Hand-made inputs for the analysis tests: probe functions with a known threshold, interval
series, and engine results with chosen figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from caplab.engine import GeneratorFigures, IntervalSnapshot, LatencySummary, RunResult
from caplab.experiments.capacity.search import GeneratorSaturated, Phase, Probe


@dataclass
class ThresholdProbe:
    """Passes iff load <= ``limit`` (``confirm_limit`` in confirmation trials: full-length trials
    can reveal a slow queue the short ones miss); throughput is the load, or ``throughput`` per call
    in turn. ``saturate_at``: raise GeneratorSaturated from this load on. ``measures_shortfall``: a
    failed trial reports the load it could have sustained (its limit), as a rate SLO does."""

    limit: float
    confirm_limit: float | None = None
    saturate_at: float | None = None
    measures_shortfall: bool = False
    throughputs: list[float] = field(default_factory=list)
    calls: list[tuple[float, Phase]] = field(default_factory=list)

    def __call__(self, load: float, phase: Phase) -> Probe:
        self.calls.append((load, phase))
        if self.saturate_at is not None and load >= self.saturate_at:
            raise GeneratorSaturated(f"the generator saturated at {load:g} (test)")
        limit = self.confirm_limit if phase == "confirm" and self.confirm_limit is not None else self.limit
        passed = load <= limit
        reasons = [] if passed else [f"p99<=50ms: 80ms fails <= 50ms (load {load:g})"]
        throughput = (
            self.throughputs[(len(self.calls) - 1) % len(self.throughputs)] if self.throughputs else load
        )
        sustainable = limit if self.measures_shortfall and not passed else None
        return Probe(phase, load, passed, reasons, throughput, 20.0 if passed else 80.0, {}, sustainable)


def latency(p50: float | None = 5.0, p99: float | None = 20.0, count: int = 100) -> LatencySummary:
    return LatencySummary(count, 1.0, p50, p50, p50, p99, p99, p99)


def interval(
    index: int,
    throughput: float,
    p50: float | None = 5.0,
    warmup: bool = False,
    length: float = 1.0,
    start: float | None = None,
    in_flight: int = 1,
    sent_rate: float | None = None,
) -> IntervalSnapshot:
    """``sent_rate``: sends per second in the interval (default: as many as completed)."""
    begin = index * length if start is None else start
    done = round(throughput * length)
    sent = done if sent_rate is None else round(sent_rate * length)
    return IntervalSnapshot(
        index, begin, begin + length, warmup, sent, done, 0, 0, in_flight, throughput, latency(p50)
    )


def series(
    throughputs: list[float],
    p50s: list[float] | None = None,
    length: float = 1.0,
    sends: list[float] | float | None = None,
    in_flight: int = 1,
) -> list[IntervalSnapshot]:
    """Intervals of these throughputs; ``sends``: the sends per second of each (one figure: a
    schedule's constant rate; default: as many as completed, sends that kept pace)."""
    p50s = p50s or [5.0] * len(throughputs)
    rates = sends if isinstance(sends, list) else [sends] * len(throughputs)
    return [
        interval(i, x, p, length=length, in_flight=in_flight, sent_rate=r)
        for i, (x, p, r) in enumerate(zip(throughputs, p50s, rates, strict=True))
    ]


def run_result(
    rate: float,
    intervals: list[IntervalSnapshot],
    duration_s: float,
    warmup_s: float,
    p99: float | None = 20.0,
    saturated: bool = False,
) -> RunResult:
    """An open-model result at ``rate`` with every request answered in time."""
    sent = round(rate * duration_s)
    generator = GeneratorFigures(
        2, 0.1, 10.0, 0.1, 0.5, 0.1, 4, saturated, "test saturation" if saturated else None
    )
    return RunResult(
        model="open",
        offered_rate=rate,
        users=None,
        duration_s=duration_s,
        warmup_s=warmup_s,
        sent=sent,
        completed=sent,
        errors=0,
        dropped=0,
        in_flight_at_end=0,
        throughput=rate,
        latency_ms=latency(p99=p99, count=sent),
        service_time_ms=latency(p99=p99, count=sent),
        errors_by_kind={},
        intervals=intervals,
        generator=generator,
        max_in_flight=None,
        interrupted=False,
        raw={},
    )
