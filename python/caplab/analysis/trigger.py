"""When an action during a trial fires on what the trial shows rather than at a set time: a
condition on the load's latest interval (``p99 > 50ms``, ``errors > 1%``, ``throughput < 500/s``)
or on a figure a collector sampled with it (``replay_lag_ms > 100``, ``send_lag_mb[pg:127.0.0.1:7600]
> 5``: a fault injected while the standby is behind), or the load having settled (``after: steady``:
the fault hits a system in its steady state, not one still warming its caches).

A trigger is checked once per interval, on the load's clock, so it fires at the end of the first
interval where it holds: ± one interval, as every time read from the series. Pure: it sees the
interval and the samples it is given, nothing else. A condition's syntax is caplab.grammar's
(grammar/condition.py), which the study file's checks share.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

from caplab import grammar
from caplab.analysis.steady import FAIR_CV, steadiness
from caplab.engine.result import IntervalSnapshot
from caplab.grammar.condition import LATENCY, LOAD_METRICS, ConditionTerm
from caplab.grammar.condition import TriggerError as TriggerError  # callers catch it from here

STEADY_INTERVALS = 5
"""``after: steady`` needs this many measured intervals in a row with completions, no errors, a
throughput that varies less than the 'fair' consistency bound and no trend."""
AFTER = ("steady",)

_OPS = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


class Figure(Protocol):
    """A collector's sample as a trigger reads it (``collect.base.ResourceSample``)."""

    @property
    def scope(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def value(self) -> float: ...


class Trigger(Protocol):
    text: str

    def check(self, interval: IntervalSnapshot, samples: Sequence[Figure]) -> str | None:
        """Why the action fires now (``p99 > 50ms: 73.2 ms``), or None while it should wait."""
        ...

    def never(self) -> str:
        """Why it never fired, for an action that did not run."""
        ...


@dataclass
class Condition:
    """``METRIC[SCOPE] OP VALUE`` on one interval: the load's latency percentile (ms), ``errors`` (%
    of the interval's finished requests) or ``throughput`` (/s); any other name is a collector's
    figure, held by any sample of it (of that scope, when one is given). Built from
    caplab.grammar's `ConditionTerm`, whose fields it repeats: it is not frozen, since it keeps
    whether the figure was ever sampled."""

    text: str
    metric: str
    scope: str | None
    op: str
    value: float
    unit: str = ""
    seen: bool = field(default=False, compare=False)
    """Whether a sample of the collector's figure ever came (else: nothing measures it here)."""

    @classmethod
    def of(cls, term: ConditionTerm) -> Condition:
        return cls(**asdict(term))

    def check(self, interval: IntervalSnapshot, samples: Sequence[Figure]) -> str | None:
        for observed in self._observed(interval, samples):
            if _OPS[self.op](observed, self.value):
                return f"{self.text}: {observed:.4g}{self.unit} at {interval.end_s:.2f}s"
        return None

    def never(self) -> str:
        if self.metric in LOAD_METRICS or self.seen:
            return f"{self.text} never held"
        where = f" of {self.scope}" if self.scope else ""
        return f"{self.text} never held: no collector sampled {self.metric}{where}"

    def _observed(self, interval: IntervalSnapshot, samples: Sequence[Figure]) -> list[float]:
        if self.metric in LATENCY:
            value = getattr(interval.latency_ms, self.metric)
            return [value] if value is not None else []
        if self.metric == "errors":
            finished = interval.completed + interval.errors
            return [100.0 * interval.errors / finished] if finished else []
        if self.metric == "throughput":
            return [interval.throughput]
        found = [
            s.value
            for s in samples
            if s.metric == self.metric and (self.scope is None or s.scope == self.scope)
        ]
        self.seen = self.seen or bool(found)
        return found


@dataclass
class Steady:
    """``after: steady``: the load has settled (``STEADY_INTERVALS``)."""

    text: str = "after steady"
    window: list[IntervalSnapshot] = field(default_factory=list)

    def check(self, interval: IntervalSnapshot, samples: Sequence[Figure]) -> str | None:
        if interval.warmup:
            return None
        if interval.completed == 0 or interval.errors:
            self.window.clear()
            return None
        self.window = [*self.window, interval][-STEADY_INTERVALS:]
        if len(self.window) < STEADY_INTERVALS:
            return None
        rates = [i.throughput for i in self.window]
        mean = statistics.fmean(rates)
        cv = statistics.stdev(rates) / mean if mean > 0 else 0.0
        if cv >= FAIR_CV or not steadiness(self.window).steady:
            return None
        return (
            f"steady at {interval.end_s:.2f}s ({mean:,.0f}/s over {STEADY_INTERVALS} intervals, cv {cv:.1%})"
        )

    def never(self) -> str:
        return f"the load was never steady for {STEADY_INTERVALS} intervals in a row"


def parse_condition(text: str) -> Condition:
    """Parses one condition (caplab.grammar's syntax) into one that is checked interval by
    interval; raises TriggerError naming what is wrong."""
    return Condition.of(grammar.parse_condition(text))


def trigger_for(when: str | None, after: str | None) -> Trigger | None:
    """The trigger of an action given ``when:`` or ``after:``; None for one fired at a time."""
    if when is not None:
        return parse_condition(when)
    if after is not None:
        if after not in AFTER:
            raise TriggerError(f"{after!r}: after: takes {', '.join(AFTER)}")
        return Steady()
    return None
