"""Capacity search: the highest load at which the SLO holds in repeated trials.

Bracket quickly (double until a trial fails, or halve until one passes), bisect with short trials
to the requested precision, then confirm with repeated full-length trials at the found load —
stepping down if a confirmation fails. The load is an arrival rate (open model) or a number of
users (closed model). A trial in which the generator saturated stops the search: its numbers
describe caplab, not the system, and must never become a capacity.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from caplab.analysis.replicates import t_quantile
from caplab.json_types import JsonDict, member, number, text

Phase = Literal["bracket", "bisect", "confirm"]

MAX_CONFIRM_ROUNDS = 6


class GeneratorSaturated(Exception):
    """The generator could not keep up: the search stops rather than report a false capacity."""


@dataclass(frozen=True)
class Probe:
    """One trial of the search and its verdict."""

    phase: Phase
    load: float
    passed: bool
    reasons: list[str]
    throughput: float
    p99_ms: float | None
    details: JsonDict = field(default_factory=dict)
    sustainable: float | None = None
    """For a trial that failed because a rate fell short of the offered load (``throughput >=
    0.99*offered``, ``app[processed_per_s] >= 0.95*offered``): the highest offered load the rate
    it did reach would have satisfied. A better next step down than a fixed fraction."""

    @property
    def busiest(self) -> tuple[str, float] | None:
        """The trial's busiest resource and its utilization (1 = all of it), when it had one."""
        busiest = member(self.details, "busiest")
        resource, utilization = text(busiest, "resource"), number(busiest, "utilization")
        return (resource, utilization) if resource is not None and utilization is not None else None

    @property
    def failed_resource(self) -> str | None:
        """The resource that gave out during the trial (memory: the OOM killer), if one did."""
        return text(self.details, "failed_resource")

    def to_dict(self) -> JsonDict:
        return {
            "phase": self.phase,
            "load": self.load,
            "passed": self.passed,
            "reasons": self.reasons,
            "throughput": self.throughput,
            "p99_ms": self.p99_ms,
            **self.details,
        }


@dataclass(frozen=True)
class SearchSettings:
    closed: bool = False
    """Search over users (closed model) instead of arrival rate."""
    start: float = 100.0
    minimum: float = 1.0
    maximum: float = 1_000_000.0
    precision: float = 0.05
    confirm_repeats: int = 3


@dataclass
class SearchOutcome:
    capacity: float | None
    ci95: tuple[float, float] | None
    capacity_throughput: float | None
    probes: list[Probe]
    search_s: float
    found: bool
    message: str
    confirmations: list[Probe] = field(default_factory=list)
    unstable: str | None = None
    """Set when confirmations above the capacity failed and the search fell back to a lower load
    that had passed: what failed above it, and where (a stall, a backlog)."""


ProbeFn = Callable[[float, Phase], Probe]


class CapacitySearch:
    def __init__(self, settings: SearchSettings, probe: ProbeFn) -> None:
        self.s = settings
        self._probe = probe
        self.probes: list[Probe] = []

    def _run(self, load: float, phase: Phase) -> Probe:
        p = self._probe(load, phase)
        self.probes.append(p)
        return p

    def _round(self, load: float) -> float:
        """Users are whole; a rate of 100/s or more is stepped to a whole rate (1,095/s, not
        1,095.41/s: no search is that precise, and the figure is read by people)."""
        if self.s.closed:
            return float(max(1, round(load)))
        return float(math.floor(load)) if load >= 100 else load

    def _midpoint(self, lo: float, hi: float) -> float:
        return float((lo + hi) // 2) if self.s.closed else (lo + hi) / 2

    def _close_enough(self, lo: float, hi: float) -> bool:
        if self.s.closed and hi - lo <= 1:
            return True
        return (hi - lo) / lo <= self.s.precision

    def run(self) -> SearchOutcome:
        began = time.monotonic()
        bracket = self._bracket()
        if isinstance(bracket, str):
            return SearchOutcome(None, None, None, self.probes, time.monotonic() - began, False, bracket)
        lo, hi = bracket
        while not self._close_enough(lo, hi):
            mid = self._midpoint(lo, hi)
            if self._run(mid, "bisect").passed:
                lo = mid
            else:
                hi = mid
        return self._confirm(lo, hi, began)

    def _bracket(self) -> tuple[float, float] | str:
        """(highest passing, lowest failing) loads, or why there are none."""
        load = self._round(min(max(self.s.start, self.s.minimum), self.s.maximum))
        first = self._run(load, "bracket")
        if first.passed:
            while True:
                nxt = self._round(min(load * 2, self.s.maximum))
                if nxt <= load:
                    return f"the SLO still holds at the maximum load searched ({load:g}); capacity is higher"
                p = self._run(nxt, "bracket")
                if not p.passed:
                    return load, nxt
                load = nxt
        while True:
            nxt = self._round(max(load / 2, self.s.minimum))
            if nxt >= load:
                return f"the SLO fails even at the minimum load ({load:g}): {'; '.join(first.reasons)}"
            p = self._run(nxt, "bracket")
            if p.passed:
                return nxt, load
            load = nxt

    def _confirm(self, lo: float, hi: float, began: float) -> SearchOutcome:
        """Confirmation rounds at the found load, stepping down when one fails. A load that passed
        stays a lower bound: when the rounds run out (or reach the minimum) above a load that had
        passed, the search confirms at that load. A capacity is said to be unstable above it when
        a confirmation above it stalled, or it lies more than a precision step below the
        bisection's answer. "No capacity" means the load that had passed failed its confirmation
        too (or none had passed)."""
        first = lo
        for _ in range(MAX_CONFIRM_ROUNDS):
            outcome = self._confirm_round(lo, hi, began)
            if outcome is not None:
                return self._judged(outcome, first)
            hi = lo
            lo = self._step_down(lo)
            if lo < self.s.minimum or lo >= hi:
                break
        floor = self._passed_below(min(p.load for p in self._failed_confirmations()))
        if floor is not None:
            outcome = self._confirm_round(floor, hi, began)
            if outcome is not None:
                return self._judged(outcome, first)
        return SearchOutcome(
            None,
            None,
            None,
            self.probes,
            time.monotonic() - began,
            False,
            "confirmation trials kept failing"
            + (f", down to {floor:g} that had passed a short trial" if floor is not None else "")
            + f": the system is not stable near its apparent capacity ({self._instability()})",
        )

    def _failed_confirmations(self) -> list[Probe]:
        return [p for p in self.probes if p.phase == "confirm" and not p.passed]

    def _passed_below(self, load: float) -> float | None:
        """The highest load below ``load`` that passed a trial: a lower bound the search measured."""
        return max((p.load for p in self.probes if p.passed and p.load < load), default=None)

    def _judged(self, outcome: SearchOutcome, first: float) -> SearchOutcome:
        """A capacity confirmed below failed rounds is unstable above it when a confirmation above
        it stalled, or it lies more than a precision step below the bisection's answer (``first``);
        a step or two down from that answer is how full-length trials usually settle."""
        failed = self._failed_confirmations()
        stalled = any(p.details.get("stall") for p in failed)
        if failed and (stalled or (outcome.capacity or 0.0) < first * (1 - self.s.precision)):
            outcome.unstable = self._instability()
            outcome.message += f"; unstable above it: {outcome.unstable}"
        return outcome

    def _instability(self) -> str:
        """What the failed confirmations met, highest load first, each load once."""
        seen: dict[float, str] = {}
        for p in sorted(self._failed_confirmations(), key=lambda p: -p.load):
            stall = p.details.get("stall")
            seen.setdefault(p.load, str(stall) if stall else "; ".join(p.reasons[:1]) or "failed")
        return "; ".join(f"at {load:g}: {why}" for load, why in seen.items())

    def _confirm_round(self, lo: float, hi: float, began: float) -> SearchOutcome | None:
        """Full-length trials at ``lo`` until one fails (None) or all pass (the outcome)."""
        runs: list[Probe] = []
        for _ in range(self.s.confirm_repeats):
            runs.append(self._run(lo, "confirm"))
            if not runs[-1].passed:
                return None  # the round has failed: its remaining trials would decide nothing
        tput = [p.throughput for p in runs]
        spread = statistics.stdev(tput) if len(tput) > 1 else 0.0
        half = t_quantile(len(tput) - 1) * spread / math.sqrt(len(tput))
        # Rates: trial-to-trial spread below, the lowest failing rate above. Users are whole: the
        # bracket itself.
        ci = (lo, hi) if self.s.closed else (max(0.0, lo - half), hi)
        message = f"SLO held in {len(runs)} of {len(runs)} confirmation trials at {lo:g}"
        return SearchOutcome(
            lo, ci, statistics.fmean(tput), self.probes, time.monotonic() - began, True, message, runs
        )

    def _step_down(self, lo: float) -> float:
        """The next confirmation load below a failed round at ``lo``: half a precision step (the
        bisection already bracketed the capacity that closely), unless the failed trial measured
        how far short the system fell, which says where to go — but no further than half-way down
        in one round: one trial that fell far short (a pause, a neighbour's burst) is one
        measurement, and the rounds below it can go on down if the system really is that slow.
        Users are whole: at least one fewer (a few users), never only one fewer (thousands)."""
        step = lo * (1 - self.s.precision / 2)
        if self.s.closed:
            step = min(lo - 1, math.floor(step))
        measured = self.probes[-1].sustainable
        if measured is not None and measured > 0:
            step = min(step, max(measured, lo / 2))
        return self._round(step)
