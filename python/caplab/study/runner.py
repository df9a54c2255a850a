"""The study runner: the study's runs — each one replicate of one cell — in the order the schedule
gives (`caplab.study.schedule`: cell after cell, or interleaved across the study in a seeded random
order). A cell's plan is compiled when its first replicate starts (`caplab.study.plan`); each
replicate then does the plan's steps in order — make its runtime directory (``{runtime}``: the
servers' data, `caplab.study.runtime`), apply the hardware, start the SUT, run the experiment with
its collectors, stop, clean up — and the cell is stored when its last replicate ends.

A failed cell (SUT did not start, died, target unreachable) is recorded with its reason, its
remaining replicates are skipped and the study goes on. Ctrl-C stores what was measured, marks
every cell begun and not finished interrupted, marks the study interrupted and stops; `resume` then
skips the cells already complete and runs every other cell's replicates again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from caplab.engine import PlanError, TargetUnreachable, UsageProblem, WorkerFailed
from caplab.engine import run as run_here
from caplab.experiments.base import Experiment, Interrupted, PlanRunner, TrialRecord
from caplab.experiments.capacity import CapacityExperiment, GeneratorSaturated, combine_replicates
from caplab.experiments.fixed import FixedLoad
from caplab.experiments.job import JobExperiment, PhaseFailed
from caplab.json_types import member
from caplab.profiles import CellHardware, ProfileError
from caplab.profiles.placement import placed
from caplab.spec import Cell, Order, Study
from caplab.store import Store
from caplab.study.baseline import baseline_line, storage_baseline, volume_baselines
from caplab.study.cell import CellRun
from caplab.study.environment import environment
from caplab.study.hardware import cell_hardware, preflight
from caplab.study.observer import StudyObserver
from caplab.study.plan import CellPlan, plan_cell
from caplab.study.recorder import CellRecorder, cell_figures, partial_figures
from caplab.study.runtime import RuntimeDirError, cell_runtime, sweep_runtime
from caplab.study.schedule import Budget, Run, Schedule, stop_after, study_order
from caplab.study.sut import SutFailed, sut_environment
from caplab.study.system import RunningSystem
from caplab.units import factors_text
from caplab.workloads.postgres import DatabaseProblem

CELL_FAILURES = (
    SutFailed,
    TargetUnreachable,
    PlanError,
    UsageProblem,
    GeneratorSaturated,
    ProfileError,
    DatabaseProblem,
    PhaseFailed,
    WorkerFailed,
    RuntimeDirError,
)
"""What fails a cell, recorded with its reason, while the study goes on."""


@dataclass(frozen=True)
class StudyOutcome:
    study_id: int
    status: str
    cells_failed: int


class Replicates:
    """What a cell's replicates add up to as they run: their trials, summaries and hardware."""

    def __init__(self) -> None:
        self.kept: list[TrialRecord] = []
        """Every trial stored, across the replicates (a failed cell keeps their figures)."""
        self.records: list[TrialRecord] = []
        """The trials whose figures are the cell's, as each experiment returned them."""
        self.summaries: list[dict[str, Any]] = []
        self.hardware: dict[str, Any] | None = None
        self.volume_baseline: dict[str, dict[str, Any]] = {}


@dataclass
class CellInProgress:
    """A cell whose first replicate has started: its row in the store and what its replicates add
    up to, kept between its runs (other cells' runs may come in between)."""

    cell: Cell
    recorder: CellRecorder
    plan: CellPlan | None = None
    done: Replicates = field(default_factory=Replicates)
    started: bool = False
    finished: bool = False


class StudyRunner:
    def __init__(
        self, study: Study, store: Store, progress: StudyObserver, plan_runner: PlanRunner = run_here
    ) -> None:
        self.study = study
        self.store = store
        self.progress = progress
        self.plan_runner = plan_runner
        """Runs each trial's plan: the engine here, or load agents on a cluster (given by the CLI)."""

    def run(self, resume: bool = False) -> StudyOutcome:
        """Runs the study's pending cells; raises ``HardwareUnavailable`` before anything is stored
        when the machine cannot apply the study's hardware profiles."""
        for swept in [*preflight(self.study), *sweep_runtime()]:
            self.progress.note(f"removed a leftover of an earlier run: {swept}")
        study_id, order, seed = self._open(resume)
        pending = self._pending(study_id)
        if order == "interleaved" and pending:
            self.progress.note(f"order: interleaved, seed {seed} (seed: {seed} in the study file repeats it)")
        schedule = Schedule({i: Budget.of(c.cell.config.replicates) for i, c in pending.items()}, order, seed)
        failed = 0
        try:
            for run in schedule.runs():
                status = self._run(pending[run.cell], run)
                if status is not None:
                    schedule.close(run.cell)
                    failed += 1 if status == "failed" else 0
        except (Interrupted, KeyboardInterrupt):
            for cell in pending.values():
                if cell.started and not cell.finished:
                    cell.recorder.interrupted()
            self.store.add_event(study_id, "interrupted", "stopped by Ctrl-C; finished cells are kept")
            self.store.finish_study(study_id, "interrupted")
            return StudyOutcome(study_id, "interrupted", failed)
        status = "failed" if failed else "complete"
        self.store.finish_study(study_id, status)
        return StudyOutcome(study_id, status, failed)

    def _open(self, resume: bool) -> tuple[int, Order, int]:
        """The study in the store (a new one, or with ``resume`` the one to go on with), the order
        of its runs and their seed."""
        study_id = self.store.find_resumable(self.study.name, self.study.text) if resume else None
        order, seed = self._order(study_id)
        if study_id is None:
            validated = self._validated(order, seed)
            study_id = self.store.create_study(
                self.study.name, self.study.text, str(self.study.path), self._environment(), validated
            )
        else:
            self.store.reopen_study(study_id)
            self.store.add_event(study_id, "resumed", "resuming: complete cells are skipped")
        return study_id, order, seed

    def _pending(self, study_id: int) -> dict[int, CellInProgress]:
        """The cells to run, by index: every cell not already complete (those are skipped)."""
        rows = self.store.add_cells(study_id, [c.factors for c in self.study.cells])
        self.progress.study_started(study_id, self.study, rows)
        pending = {}
        for cell, row in zip(self.study.cells, rows, strict=True):
            if row.status == "complete":
                self.progress.cell_skipped(cell)
            else:
                pending[cell.index] = CellInProgress(cell, CellRecorder(self.store, study_id, row))
        return pending

    def _order(self, resumed: int | None) -> tuple[Order, int]:
        """The study's run order and seed: as the file gives them, else the default order and a
        seed drawn now — or, resuming, the one the study was stored with."""
        config = self.study.cells[0].config if self.study.cells else None
        budgets = {c.index: Budget.of(c.config.replicates) for c in self.study.cells}
        order = study_order(config.order if config else None, budgets)
        if config is not None and config.seed is not None:
            return order, config.seed
        stored = self.store.study_document(resumed).study.validated if resumed is not None else None
        seed = stored.get("seed") if stored else None
        return order, seed if isinstance(seed, int) else secrets.randbelow(2**31)

    def _validated(self, order: Order, seed: int) -> dict[str, object] | None:
        """The study as validated, defaults filled in: its first cell's configuration (a default is
        the same in every cell; what a factor varies the report states as the file wrote it), with
        the order its runs were made in and the seed it was drawn from."""
        if not self.study.cells:
            return None
        return self.study.cells[0].config.model_dump(mode="json") | {"order": order, "seed": seed}

    def _environment(self) -> dict[str, Any]:
        """The machine, and what its storage does alone when the study asks for a baseline."""
        env = environment()
        spec = self.study.cells[0].config.storage_baseline if self.study.cells else None
        if spec is not None:
            self.progress.note(
                f"storage baseline: fio, {spec.block} random reads then writes, "
                f"{spec.jobs} jobs at queue depth {spec.depth}, {spec.runtime:g}s each"
            )
            env["storage_baseline"] = baseline = storage_baseline(spec, self.study.directory)
            self.progress.note(baseline_line(baseline))
        return env

    def _run(self, cell: CellInProgress, run: Run) -> str | None:
        """Runs one replicate of a cell, beginning the cell at its first; the cell's status when
        this run ends it (``complete`` or ``failed``), else None. Interrupts propagate."""
        try:
            if cell.plan is None:
                cell.started = True
                cell.recorder.begin()
                self.progress.cell_started(cell.cell)
                cell.plan = plan_cell(self.study, cell.cell)
            line = replicate_line(cell.cell, run, cell.plan.replicates)
            if line is not None:
                cell.recorder.event("replicate", line)
                self.progress.replicate_started(cell.cell, line)
            self._replicate(cell.plan, run.replicate, cell.recorder, cell.done)
            if run.last_of_round:
                return self._settle(cell, cell.plan, run.replicate + 1)
            return None
        except CELL_FAILURES as e:
            cell.finished = True
            done = cell.done
            metrics_so_far = partial_figures(done.kept, done.hardware)
            cell.recorder.failed(str(e), metrics_so_far)
            self.progress.cell_finished(cell.cell, "failed", metrics_so_far or {}, {}, str(e))
            return "failed"

    def _settle(self, cell: CellInProgress, plan: CellPlan, made: int) -> str | None:
        """After a cell's last run of a round: stores it complete when its replicates are enough
        (why they are, with ``until``, in its capacity), else leaves it for the next round."""
        done, budget = cell.done, plan.replicates
        stop = stop_after(budget, made, member(combine_replicates(done.summaries), "capacity"))
        if stop is None:
            return None
        if budget.until is not None:
            line = f"{_where(cell.cell)}: {made} replicates, {stop.reason}"
            cell.recorder.event("replicates", line)
            self.progress.note(line)
        metrics, resources = cell_figures(
            plan, done.records, done.summaries, done.hardware, done.volume_baseline
        )
        if budget.until is not None and isinstance(capacity := metrics.get("capacity"), dict):
            metrics["capacity"] = capacity | stop.to_json(budget.until)
        cell.finished = True
        cell.recorder.complete(metrics, resources)
        self.progress.cell_finished(cell.cell, "complete", metrics, resources)
        return "complete"

    def _replicate(self, plan: CellPlan, replicate: int, recorder: CellRecorder, done: Replicates) -> None:
        """One replicate: a fresh start of the system, since what varies from run to run is what
        an interval a decision rests on must contain. Its placement and hardware are made before
        the system starts and removed after it stops, whatever happens in between."""
        # The runtime directory first (the servers' data and the hardware's files go in it, and it
        # goes last); then the placement: caplab's daemons (link delay, device models) start on its CPUs.
        with (
            cell_runtime(f"cell-{plan.cell.index}") as runtime,
            placed(plan.hardware.placement) as place,
            cell_hardware(plan.hardware, runtime / "hardware") as hw,
        ):
            bound = plan.on(hw, runtime)
            if replicate == 0:
                self.progress.note(plan.hardware.placement.describe())
            if hw is not None and replicate == 0:
                for role, lines in hw.describe().items():
                    self.progress.note(f"{role} on {', '.join(lines)}")
                done.volume_baseline = self._volume_baseline(bound, hw)
            system = RunningSystem(bound, hw, place)
            system.start()
            try:
                run = CellRun(bound, system, recorder, self.progress, self.plan_runner, done.kept)
                done.records += experiment_for(bound, run).run(run)
                done.summaries.append(run.summary)
            finally:
                system.stop()
                done.hardware = system.hardware_summary() or done.hardware

    def _volume_baseline(self, plan: CellPlan, hw: CellHardware) -> dict[str, dict[str, Any]]:
        """With a storage baseline asked for, fio on each fresh volume (once per device model,
        whatever it holds) before the system starts."""
        spec = plan.hardware.storage_baseline
        paths = hw.storage_paths
        if spec is None or not paths:
            return {}
        roles = {name.split("/", 1)[0] for name in paths}
        baseline = volume_baselines(spec, paths, {r: hw.launch_prefix(r) for r in roles})
        for name, figures in baseline.items():
            self.progress.note(baseline_line(figures, f"volume {name}"))
        return baseline


def experiment_for(plan: CellPlan, run: CellRun) -> Experiment:
    """What the cell runs: a job's phases, a capacity search, or the load as written."""
    planned = plan.experiment
    if planned.job is not None:  # its phases run on the job's role's profile, when it has one
        role, hw = planned.job.role, run.system.hw
        prefix = hw.launch_prefix(role) if role is not None and hw is not None and role in hw.profiles else []
        roles = [r.name for r in run.roles]
        job, url = planned.job, planned.metrics_url
        return JobExperiment(job, plan.directory, sut_environment(), roles, prefix, url)
    if planned.kind == "capacity":
        return CapacityExperiment(plan.config)
    return FixedLoad(planned.repeat)


def replicate_line(cell: Cell, run: Run, budget: Budget) -> str | None:
    """``cell #2 (hosts=3), replicate 2 of 3 (run 5 of the study)``: which run this is, for the
    progress and the store's events; None for a cell that runs once."""
    if budget.max == 1:
        return None
    of = f"of {budget.min}" if budget.until is None else f"of at most {budget.max}"
    return f"{_where(cell)}, replicate {run.replicate + 1} {of} (run {run.position + 1} of the study)"


def _where(cell: Cell) -> str:
    """``cell #2 (hosts=3)``: the cell's index (as the report numbers cells) and its factors."""
    return f"cell #{cell.index} ({factors_text(cell.factors)})"
