"""Each trial over time: load and latency per interval beside the resources sampled at the same
instants (the collectors sample on the load's clock), for the charts over time.

Kept compact — a list per figure — because results.json and index.html carry one per trial.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from caplab.analysis.scope import ResourceScope, ScopeKind, role_scope
from caplab.collect.base import ResourceSample
from caplab.json_types import JsonObject, integer, member, number
from caplab.report.model.cells import TrialKey, trial_key
from caplab.report.model.types import SeriesResources, TrialSeries
from caplab.store.document import CellRecord, TrialRecord

MAX_TRIALS_PER_CELL = 40
"""A long search keeps its confirmation trials and its latest probes; beyond this, older ones go."""


def _r(value: Any, digits: int = 3) -> Any:
    """Rounded when a float (the store's values are untyped: an int stays an int)."""
    return round(value, digits) if isinstance(value, float) else value


def _is(scope: str, kind: ScopeKind) -> bool:
    """Whether a sampled scope is one of ``kind`` (a disk, an interface)."""
    named = ResourceScope.of(scope)
    return named is not None and named.kind == kind


def _resources(samples: list[ResourceSample], roles: list[str]) -> SeriesResources:
    by_t: dict[float, dict[tuple[str, str], float]] = defaultdict(dict)
    for s in samples:
        by_t[round(s.t, 3)][(s.scope, s.metric)] = s.value
    times = sorted(by_t)

    Row = dict[tuple[str, str], float]

    def column(pick: Callable[[Row], float | None]) -> list[float | None]:
        return [_r(pick(by_t[t])) for t in times]

    def total(row: Row, kind: ScopeKind, metric: str) -> float | None:
        found = [v for (scope, m), v in row.items() if m == metric and _is(scope, kind)]
        return sum(found) if found else None

    def busiest(row: Row) -> float | None:
        found = [v for (scope, m), v in row.items() if m == "busy_percent" and _is(scope, ScopeKind.DISK)]
        return max(found) if found else None

    def sampled(scope: str, metric: str) -> list[float | None]:
        return column(lambda row: row.get((scope, metric)))

    cpu = {role: sampled(role_scope(role), "cpu_percent") for role in roles}
    cpu["host"] = sampled("host", "cpu_percent")
    cpu["generator"] = sampled("generator", "cpu_percent")
    app_names = sorted({m for row in by_t.values() for (scope, m) in row if scope == "app"})
    return {
        "t": times,
        "cpu_percent": {k: v for k, v in cpu.items() if any(x is not None for x in v)},
        "disk_busy_percent": column(busiest),
        "net_rx_mb_s": column(lambda row: total(row, ScopeKind.NET, "rx_mb_s")),
        "net_tx_mb_s": column(lambda row: total(row, ScopeKind.NET, "tx_mb_s")),
        "app": {name: sampled("app", name) for name in app_names},
    }


@dataclass(frozen=True)
class _Interval:
    """One interval snapshot of the engine (its window in seconds since the trial started)."""

    json: JsonObject

    @property
    def start_s(self) -> float:
        return number(self.json, "start_s") or 0.0

    @property
    def end_s(self) -> float:
        return number(self.json, "end_s") or 0.0


def trial_series(
    cell: CellRecord,
    trial: TrialRecord,
    samples: list[ResourceSample],
    roles: list[str],
    representative: bool,
) -> TrialSeries:
    """One trial's series: ``t`` is each interval's end (seconds since the trial started), the
    resources' ``t`` each sample's instant on the same clock."""
    intervals = [_Interval(i) for i in trial.intervals]
    window_end = trial.warmup_s + trial.duration_s
    times: list[float] = []
    scale: list[float] = []
    for i in intervals:
        # The last interval is cut short by the end of the window: its rate is over the part that ran.
        length = i.end_s - i.start_s
        ran = min(i.end_s, window_end) - i.start_s if window_end else length
        partial = 0 < ran < length
        times.append(_r(i.start_s + ran if partial else i.end_s))
        scale.append(length / ran if partial else 1.0)

    def rate(key: str) -> list[float | None]:
        return [
            _r(found * k) if (found := number(i.json, key)) is not None else None
            for i, k in zip(intervals, scale, strict=True)
        ]

    def latency(key: str) -> list[float | None]:
        return [_r(number(member(i.json, "latency_ms"), key)) for i in intervals]

    lengths = [max(i.end_s - i.start_s, 1e-9) for i in intervals]
    return {
        "cell": cell.index,
        "kind": trial.kind,
        "index": trial.index,
        "offered_rate": trial.offered_rate,
        "users": trial.users,
        "warmup_s": number(trial.result, "warmup_s"),
        "duration_s": number(trial.result, "duration_s"),
        "t": times,
        "throughput": rate("throughput"),
        "errors_per_s": [
            _r((number(i.json, "errors") or 0) / d * k)
            for i, d, k in zip(intervals, lengths, scale, strict=True)
        ],
        "in_flight": [integer(i.json, "in_flight") for i in intervals],
        "latency_p50_ms": latency("p50"),
        "latency_p99_ms": latency("p99"),
        "latency_max_ms": latency("max"),
        "resources": _resources(samples, roles),
        "representative": representative,
    }


def representative(trials: Sequence[TrialRecord]) -> int | None:
    """Which of a cell's trials stands for it: the last confirmation, else the last fixed-load
    trial, else the last one."""
    for wanted in ("search:confirm", "fixed"):
        found = [i for i, t in enumerate(trials) if t.kind == wanted]
        if found:
            return found[-1]
    return len(trials) - 1 if trials else None


def cell_series(
    cell: CellRecord, samples: dict[TrialKey, list[ResourceSample]], roles: list[str]
) -> list[TrialSeries]:
    """The series of a cell's trials (the representative one flagged ``representative``)."""
    trials = cell.trials
    chosen = representative(trials)
    keep = list(range(len(trials)))[-MAX_TRIALS_PER_CELL:]
    if chosen is not None and chosen not in keep:
        keep = [chosen, *keep[1:]]
    out: list[TrialSeries] = []
    for i in keep:
        t = trials[i]
        rows = samples.get(trial_key(cell, t), [])
        out.append(trial_series(cell, t, rows, roles, i == chosen))
    return out
