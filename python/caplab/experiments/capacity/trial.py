"""A search trial: run the load, sample resources, judge it against the SLO and steady state.

Shared by `caplab find-capacity` and by studies with `search:`; the caller decides where trials
go (a study stores each one) through `on_trial`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from caplab.analysis.backlog import Backlog, Stall, backlog, longest_stall
from caplab.analysis.generator import closed_loop_gap, crowded_out, generator_limited
from caplab.analysis.limit import Limit, LimitEvidence, demands, find_limit, same_resource
from caplab.analysis.slo import Slo, TrialFigures, Verdict, as_dict, evaluate, parse_slo, sustainable
from caplab.analysis.steady import LittlesLaw, Steadiness, littles_law, steadiness
from caplab.collect import MetricsSource, RoleSpec, cell_resources, default_collectors, summarize
from caplab.engine import LoadSpec, RunResult, build_plan, run
from caplab.experiments.base import PlanRunner, ProgressFn, SamplerSet, SystemFault, TrialRecord, run_trial
from caplab.experiments.capacity.mix import ActionFigures, PerUser, action_figures, per_user
from caplab.experiments.capacity.search import GeneratorSaturated, Phase, Probe, SearchOutcome
from caplab.json_types import JsonDict, items, number

NO_BACKLOG = "throughput>=0.99*offered"
INTERVAL_S = 0.5
MIN_SAMPLES = {"p50": 2, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}


@dataclass(frozen=True)
class TrialLength:
    """How long a search trial runs: its measured window and the warm-up before it."""

    duration_s: float
    warmup_s: float


OnTrial = Callable[[TrialRecord, Probe], SystemFault | None]
"""Sees each judged trial (a study stores it); returns a `SystemFault` when the system did not
survive the trial (and was started again), which fails the trial at its load."""


GENERATOR_ATTEMPTS = 2
"""Trials at one load before a generator that keeps falling behind stops the search."""


@dataclass(frozen=True)
class LimitAnalysis:
    """The limit at capacity and the signals beside it; all None when no capacity was found."""

    limit: Limit | None = None
    consistency: str | None = None
    littles_law: LittlesLaw | None = None
    actions: list[ActionFigures] = field(default_factory=list)
    """Each request class (a usage profile's action) over the confirmation trials at capacity."""
    per_user: PerUser | None = None
    """A usage profile's actions per user-second, offered and reached, at capacity."""


@dataclass(frozen=True)
class _Measured:
    """One trial's result and what its measured window says: every scope's means, the cell's
    resources, the backlog the window left and its longest stall."""

    result: RunResult
    scopes: dict[str, dict[str, float]]
    resources: dict[str, dict[str, float]]
    carried: Backlog | None
    stall: Stall | None


def _failures(verdicts: list[Verdict], steady: Steadiness, measured: _Measured) -> list[str]:
    """Why the trial failed on the system's side: each SLO it missed, an unsteady window, an
    interruption; and, for a failed trial, where the interval series shows a stall."""
    reasons = [v.reason for v in verdicts if not v.passed]
    if not steady.steady:
        reasons.append(f"not steady: {steady.reason}")
    if measured.result.interrupted:
        reasons.append("interrupted")
    if measured.stall and reasons:
        reasons.append(measured.stall.describe())  # why it failed, where the interval series shows it
    return reasons


class TrialProber:
    """Turns a load (rate or users) into a judged trial; keeps the records for the limit analysis."""

    def __init__(
        self,
        base: LoadSpec,
        slos: list[Slo],
        roles: list[RoleSpec],
        short: TrialLength,
        full: TrialLength,
        closed: bool,
        on_trial: OnTrial | None = None,
        progress: ProgressFn | None = None,
        metrics: MetricsSource | None = None,
        runner: PlanRunner = run,
        collectors: SamplerSet | None = None,
    ) -> None:
        self.base = base
        self.runner = runner
        self.collectors = collectors
        """The cell's collectors (its PostgreSQL nodes and remote hosts too), else the roles' and
        metrics' alone, made afresh for each trial."""
        self.metrics = metrics
        self.closed = closed
        self.slos = (
            slos
            if closed or any(s.relative_to_offered and s.metric == "throughput" for s in slos)
            else [*slos, parse_slo(NO_BACKLOG)]
        )
        self.roles = roles
        # Roles sharing one machine (a combined server), judged by its CPU together.
        self.machines = {x.name: x.profile.machine for x in roles if x.profile and x.profile.machine}
        self.short = short
        self.full = full
        self.on_trial = on_trial
        self.progress = progress
        self.records: list[tuple[Probe, TrialRecord]] = []
        self.needed = max((MIN_SAMPLES.get(s.metric, 0) for s in self.slos), default=0) * 1.2

    def load_spec(self, load: float, phase: Phase) -> LoadSpec:
        shape = self.full if phase == "confirm" else self.short
        # An open-model trial must hold enough requests for its SLO's percentiles (p99: 100).
        duration = shape.duration_s if self.closed else max(shape.duration_s, min(self.needed / load, 60.0))
        # Whole intervals: the window then ends on an interval's end, where the number in flight
        # that the no-backlog check reads is taken (analysis/backlog.py).
        duration = math.ceil(duration / INTERVAL_S - 1e-9) * INTERVAL_S
        # Each trial its own arrivals (a search's repeated confirmations must not all judge one
        # realisation of the Poisson sends), the same in a rerun.
        seed = self.base.seed + len(self.records)
        common = {"duration_s": duration, "warmup_s": shape.warmup_s, "interval_s": INTERVAL_S, "seed": seed}
        if self.closed:
            return replace(self.base, rate=None, users=int(load), **common)  # type: ignore[arg-type]
        return replace(self.base, rate=load, users=None, think_s=0.0, **common)  # type: ignore[arg-type]

    def __call__(self, load: float, phase: Phase) -> Probe:
        """One judged trial at ``load``. A trial whose generator fell behind on its own (not
        crowded out) measured the generator, not the system: it is kept, marked, and run again
        once — a single stall (another process, a page-cache flush) must not end a search — and
        only a second one stops the search."""
        reason = ""
        for _ in range(GENERATOR_ATTEMPTS):
            probe, stalled = self._attempt(load, phase)
            if stalled is None:
                return probe
            reason = stalled
        raise GeneratorSaturated(
            f"the generator was the limit at {load:g} ({reason}) in {GENERATOR_ATTEMPTS} trials; the "
            "search stopped rather than report the generator's limit as the system's — give caplab "
            "more cores or threads, or run it on another machine"
        )

    def _attempt(self, load: float, phase: Phase) -> tuple[Probe, str | None]:
        """Runs and judges one trial; also returns why its generator fell behind, if it did."""
        record, measured = self._measure(load, phase)
        r = measured.result
        verdicts = evaluate(self.slos, self._figures(measured))
        steady = steadiness(r.intervals, r.warmup_s + r.duration_s, r.users)
        reasons = _failures(verdicts, steady, measured)
        blamed, stalled = self._blame_generator(measured, failed=bool(reasons))
        reasons += blamed
        probe = Probe(
            phase,
            load,
            not reasons,
            reasons,
            r.throughput,
            r.latency_ms.p99,
            self._details(measured, verdicts, steady),
            # A stall's shortfall is a pause, not the rate the system sustains: no step down to it.
            None if measured.stall else sustainable(load, self.slos, verdicts),
        )
        return self._settle(record, probe, stalled)

    def _measure(self, load: float, phase: Phase) -> tuple[TrialRecord, _Measured]:
        """Runs one trial at ``load`` and reads its measured window (the plan's: the trial as
        actually run)."""
        plan = build_plan(self.load_spec(load, phase))
        collectors = self.collectors or default_collectors(self.roles, self.metrics)
        record = run_trial(plan, collectors, self.progress, runner=self.runner)
        record.kind = f"search:{phase}"
        r = record.result
        warmup, window_end = plan.warmup_s, plan.warmup_s + plan.duration_s
        return record, _Measured(
            r,
            summarize(record.samples, warmup, window_end),
            cell_resources(record.samples, warmup, window_end),
            backlog(r),
            longest_stall(r),
        )

    def _figures(self, measured: _Measured) -> TrialFigures:
        """What the SLOs are evaluated against."""
        r = measured.result
        return TrialFigures(
            r.offered_rate,
            r.throughput,
            r.sent,
            r.errors,
            r.latency_ms.__dict__,
            measured.resources,
            int(measured.scopes.get("host", {}).get("cores", 1)),
            self.machines,
            measured.carried.carried_rate if measured.carried else None,
        )

    def _blame_generator(self, measured: _Measured, failed: bool) -> tuple[list[str], str | None]:
        """Whether the generator rather than the system made the trial what it was: the reasons
        that say so and, when the generator fell behind on its own, why (the trial is then not a
        measurement of the system). A late generator crowded out by the SUT is the system's doing."""
        generator, resources = measured.result.generator, measured.resources
        crowded = (
            crowded_out(generator, resources, [x.name for x in self.roles]) if generator.saturated else None
        )
        if crowded:
            return [crowded], None
        if generator.saturated:
            stalled = generator.saturation_reason or "late"
            return [f"generator fell behind ({stalled}): not a measurement of the system"], stalled
        if failed:
            # A failure is the system's only if the generator's own lateness did not make it.
            limited = generator_limited(generator, self.slos, resources)
            if limited:
                return [limited], limited
        return [], None

    def _details(self, measured: _Measured, verdicts: list[Verdict], steady: Steadiness) -> JsonDict:
        """What a trial's record keeps beside its verdict: the figures the search and the report read."""
        r, carried, stall, resources = measured.result, measured.carried, measured.stall, measured.resources
        table = demands(r.throughput, measured.scopes, [x.name for x in self.roles], self.machines)
        return {
            "offered_rate": r.offered_rate,
            "users": r.users,
            "sent": r.sent,
            "errors": r.errors,
            "dropped": r.dropped,
            "p50_ms": r.latency_ms.p50,
            # The generator's own send lateness, in every trial: how much of the latency judged
            # was the generator's (see generator_limited), whether or not it was flagged.
            "lateness_p99_ms": r.generator.lateness_p99_ms,
            # What the window did with its arrivals: the no-backlog check's evidence.
            "backlog": carried.describe() if carried else None,
            "carried_rate": carried.carried_rate if carried else None,
            "stall": stall.describe() if stall else None,
            "in_flight": statistics.fmean([i.in_flight for i in r.intervals if not i.warmup] or [0]),
            "verdicts": [as_dict(v) for v in verdicts],
            "consistency": steady.consistency,
            "throughput_cv": steady.throughput_cv,
            "busiest": {"resource": table[0].resource, "utilization": table[0].utilization}
            if table
            else None,
            # The resources this trial took past their acceptable maximum (a CPU ceiling in the SLO).
            "ceilings": [
                s.ceiling for s, v in zip(self.slos, verdicts, strict=True) if s.ceiling and not v.passed
            ],
            "resources": resources,
        }

    def _settle(self, record: TrialRecord, probe: Probe, stalled: str | None) -> tuple[Probe, str | None]:
        """Shows the judged trial to ``on_trial``, which may say the system gave out during it;
        keeps it for the limit analysis; an interrupted trial then ends the search."""
        fault = self.on_trial(record, probe) if self.on_trial is not None else None
        if fault is not None:
            # The system gave out at this load (and was started again): a failed trial whose figures,
            # cut short, say nothing of what it would sustain; its own verdicts are the kill's doing.
            probe.details["failed_resource"] = fault.resource
            probe = replace(probe, passed=False, reasons=[fault.reason], sustainable=None)
            stalled = None
        self.records.append((probe, record))
        if record.result.interrupted and fault is None:
            raise KeyboardInterrupt
        return probe, stalled

    def analyse(self, outcome: SearchOutcome) -> LimitAnalysis:
        """The limit at capacity (from the confirmation trials) and its supporting signals."""
        confirm = [(p, rec) for p, rec in self.records if p.phase == "confirm" and p.passed]
        if not outcome.found or not confirm:
            return LimitAnalysis()
        last = confirm[-self.full_repeats(confirm) :]
        samples = [s for _, rec in last for s in rec.samples]
        ran = last[-1][1].result
        scopes = summarize(samples, ran.warmup_s, ran.warmup_s + ran.duration_s)
        throughput = statistics.fmean(p.throughput for p, _ in last)
        roles = [x.name for x in self.roles]
        limit = find_limit(
            throughput,
            scopes,
            roles,
            self._signals(outcome),
            self._busiest_above(outcome),
            self.machines,
            self._ceiling_above(outcome),
        )
        if limit["kind"] == "software" and not self.closed:
            limit = self._compare_closed_loop(limit, throughput, last[-1][1])
        rec = last[-1][1].result
        results = [r.result for _, r in last]
        return LimitAnalysis(
            actions=action_figures(results),
            per_user=per_user(self.base.usage, results) if self.base.usage else None,
            limit=limit,
            consistency=steadiness(rec.intervals, rec.warmup_s + rec.duration_s, rec.users).consistency,
            littles_law=littles_law(
                rec.throughput, rec.latency_ms.mean, rec.intervals, rec.warmup_s + rec.duration_s
            ),
        )

    def _compare_closed_loop(self, limit: Limit, capacity: float, at: TrialRecord) -> Limit:
        """A software limit found by an open loop, checked against a closed loop at the same
        concurrency: a system that serves those users far faster did not set that limit. A load
        spread over more targets than it kept requests in flight has no such closed loop (the
        engine gives every target a user of its own, and more users than the concurrency at
        capacity would compare unlike with unlike), so the limit stands unchecked."""
        measured = [i.in_flight for i in at.result.intervals if not i.warmup]
        users = max(1, math.ceil(statistics.fmean(measured or [1])))
        if users < 1 + len(self.base.extra_targets):
            return limit
        spec = replace(self.base, rate=None, ramp_to=None, users=users, duration_s=self.short.duration_s)
        spec = replace(spec, warmup_s=self.short.warmup_s, interval_s=INTERVAL_S)
        closed = run_trial(build_plan(spec), default_collectors([], None)).result
        evidence: LimitEvidence = {
            **limit["evidence"],
            "closed_loop": {"users": users, "throughput": closed.throughput},
        }
        gap = closed_loop_gap(capacity, users, closed.throughput)
        if gap is None:
            return {**limit, "evidence": evidence}
        evidence["signals"] = [*evidence.get("signals", []), gap]
        return {
            **limit,
            "resource": "generator",
            "kind": "generator",
            "evidence": evidence,
            "summary": f"generator or network, not the system: {gap}",
        }

    @staticmethod
    def full_repeats(confirm: list[tuple[Probe, TrialRecord]]) -> int:
        loads = [p.load for p, _ in confirm]
        return sum(1 for x in loads if x == loads[-1])

    @staticmethod
    def _first_above(outcome: SearchOutcome) -> Probe | None:
        """The first trial that failed above capacity: what stopped the search."""
        above = [p for p in outcome.probes if not p.passed and outcome.capacity and p.load > outcome.capacity]
        return min(above, key=lambda p: p.load) if above else None

    def _busiest_above(self, outcome: SearchOutcome) -> tuple[str, float] | None:
        first = self._first_above(outcome)
        if first is None:
            return None
        if first.failed_resource is not None:  # it gave out there (memory: the OOM killer)
            return first.failed_resource, 1.0
        return first.busiest

    def _ceiling_above(self, outcome: SearchOutcome) -> str | None:
        """The busiest resource of the first trial above capacity, if that trial failed its ceiling
        in the SLO (the study's acceptable maximum: the paper's 75 % CPU) — and so the limit."""
        first = self._first_above(outcome)
        if first is None:
            return None
        busiest = first.busiest
        ceilings = [str(c) for c in items(first.details, "ceilings")]
        if busiest and any(same_resource(c, busiest[0]) for c in ceilings):
            return busiest[0]
        return None

    def _signals(self, outcome: SearchOutcome) -> list[str]:
        """What the trials just above capacity say: latency climbing while the CPU stays idle, a
        concurrency ceiling."""
        if outcome.capacity is None:
            return []
        above = sorted(
            (p for p in outcome.probes if not p.passed and p.load > outcome.capacity), key=lambda p: p.load
        )
        at = [p for p in outcome.probes if p.passed and p.load == outcome.capacity]
        if not above or not at:
            return []
        fail, ok = above[0], at[-1]
        if fail.failed_resource is not None:  # the system gave out there: nothing else to read
            return [f"at {fail.load:,g}{' users' if self.closed else '/s'}: {fail.reasons[0]}"]
        out = []
        if busiest := fail.busiest:
            # What failed, in the SLO's own words; the latency rise only when there was one.
            failed = "; ".join(fail.reasons) or "the trial failed"
            climbed = (
                f", p99 {ok.p99_ms:.1f} → {fail.p99_ms:.1f} ms"
                if fail.p99_ms and ok.p99_ms and fail.p99_ms > 1.5 * ok.p99_ms
                else ""
            )
            span = (
                f"{ok.load:,g} to {fail.load:,g} users"
                if self.closed
                else f"{ok.load:,g}/s to {fail.load:,g}/s offered"
            )
            where = f"{busiest[0]} was at {busiest[1]:.0%}"
            out.append(f"from {span}, {failed}{climbed}, while {where}")
        growth = fail.throughput / ok.throughput if ok.throughput else 0.0
        in_flight = number(fail.details, "in_flight") or 0.0
        if growth < 1.0 + 0.5 * (fail.load / ok.load - 1.0):
            out.append(
                f"throughput stopped growing with load ({ok.throughput:,.1f} → {fail.throughput:,.1f}/s) "
                f"with {in_flight:.1f} requests in flight: a concurrency ceiling "
                "(a pool, a lock, one thread)"
            )
        return out
