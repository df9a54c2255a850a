"""One replicate of a cell, run: the `CellContext` its experiment works through. It runs a
trial with the plan's collectors watching, stores it, and stops the cell when the system died or
Ctrl-C was pressed; a trial the OOM killer ended is a search's failed probe, after which the system
is started afresh."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from caplab.collect import MetricsSource, RoleSpec, default_collectors
from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, LoadSpec, Plan, build_plan
from caplab.experiments.actions import TrialActions
from caplab.experiments.base import (
    Interrupted,
    PlanRunner,
    SamplerSet,
    SystemFault,
    TrialRecord,
    run_trial,
)
from caplab.experiments.failover import FailoverReading
from caplab.json_types import JsonDict
from caplab.study.load import load_spec_for
from caplab.study.observer import StudyObserver
from caplab.study.oom import OomWatch
from caplab.study.plan import CellPlan
from caplab.study.recorder import CellRecorder
from caplab.study.sut import SutFailed, sut_environment
from caplab.study.system import RunningSystem


class CellRun:
    """A replicate's trials on its started system, kept as they finish."""

    def __init__(
        self,
        plan: CellPlan,
        system: RunningSystem,
        recorder: CellRecorder,
        progress: StudyObserver,
        plan_runner: PlanRunner,
        kept: list[TrialRecord],
    ) -> None:
        self.cell_plan = plan
        """The cell compiled, bound to this replicate's hardware."""
        self.system = system
        self.recorder = recorder
        self.progress = progress
        self.plan_runner = plan_runner
        self.records = kept
        """Every trial of the cell so far, across its replicates (shared by their runs)."""
        self.summary: JsonDict = {"started_at": datetime.now(UTC).isoformat(timespec="milliseconds")}
        """What the replicate adds to the cell's metrics; when it began measuring (its system
        started) is kept per replicate, the time a drift of the machine is read against."""
        self.oom = OomWatch(system.hw)
        self.roles: list[RoleSpec] = system.roles()
        self.metrics: MetricsSource | None = plan.collectors.metrics
        c = plan.collectors
        self._collectors = default_collectors(self.roles, c.metrics, list(c.databases), dict(c.hosts))
        config = plan.config
        self.failover = FailoverReading(
            config.target.postgres if config.target else None,
            config.recovery,
            plan.directory,
            note=progress.note,
            event=lambda line: recorder.event("action", line),
        )
        """What each trial's actions, ledger and failover add to the replicate's summary."""

    @property
    def collectors(self) -> SamplerSet:
        return self._collectors

    def load_spec(self) -> LoadSpec:
        """The cell's load, seeded by the trial's place in the cell (across its replicates): each
        trial draws its own Poisson arrivals and mix, and a rerun of the study draws the same."""
        return replace(load_spec_for(self.cell_plan.config, self.cell_plan.directory), seed=len(self.records))

    def plan(self) -> Plan:
        return build_plan(self.load_spec())

    def trial(self, plan: Plan, index: int, kind: str) -> TrialRecord:
        self.progress.trial_started(index, self.cell_plan.experiment.repeat, plan)
        actions = self._actions()
        try:
            watch = actions.watching(self.watch) if actions else self.watch  # conditions see each interval
            record = run_trial(
                plan, self.collectors, watch, actions.start if actions else None, runner=self.plan_runner
            )
        except BaseException:
            if actions:
                actions.stop(finish_running=False)
            raise
        outcomes = actions.stop(finish_running=not record.result.interrupted) if actions else []
        record.kind = kind
        for key, entries in self.failover.read(record, outcomes, len(self.records)).items():
            kept = self.summary.get(key)  # len(self.records): the trial's place across replicates
            self.summary[key] = [*(kept if isinstance(kept, list) else []), *entries]
        self.keep(record)
        return record

    def _actions(self) -> TrialActions | None:
        """The study's actions for one trial, or None for a study without any."""
        config = self.cell_plan.config
        if not config.actions:
            return None
        declared = config.sut.actions if config.sut else {}
        directory = self.cell_plan.directory
        return TrialActions(config.actions, declared, directory, sut_environment(), self.system.placement)

    def watch(self, snapshot: IntervalSnapshot, samples: list[ResourceSample]) -> bool:
        """Shows progress; stops the trial at once when the SUT has died (no point measuring
        connection errors for the rest of it)."""
        self.progress.interval(snapshot, samples)
        if self.oom.killed():
            return False
        return self.system.alive()

    def keep_probe(self, record: TrialRecord) -> SystemFault | None:
        """Stores a search's trial; a trial the OOM killer ended is the load's failure, and the
        system is started afresh (on the same hardware) for the next one. Other deaths end the cell."""
        try:
            self.keep(record)
        except SutFailed:
            fault = self.oom.fault
            if fault is None:
                raise
            self.progress.note(f"{fault.reason} (trial {len(self.records)}); starting the system afresh")
            self.system.restart()
            self.oom.restarted()
            return fault
        return None

    def keep(self, record: TrialRecord) -> None:
        """Stores a finished trial, then stops the cell if it was interrupted or the SUT died."""
        index = sum(1 for r in self.records if r.kind == record.kind)
        oom = self.oom.killed()
        died = oom is not None or not self.system.alive()
        interrupted = record.result.interrupted and not died
        status = "failed" if died else "interrupted" if interrupted else "complete"
        self.recorder.trial(index, record, status)
        for missing in self._collectors.missing_roles():
            # An error of the trial's record, not a 0 % figure: the role looked in the wrong place.
            self.recorder.event("role_missing", f"trial {len(self.records) + 1} ({record.kind}): {missing}")
            self.progress.note(f"error: {missing} during trial {len(self.records) + 1}")
        self.records.append(record)
        self.progress.trial_finished(record.kind, record.result, record.samples)
        if interrupted:
            raise Interrupted()
        if oom is not None:
            raise SutFailed(f"{oom} (trial {len(self.records)})")
        if died:
            assert self.system.sut is not None
            raise SutFailed(self.system.sut.exit_message(f"during trial {len(self.records)}"))
