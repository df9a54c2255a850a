"""The study runner: for each cell of the matrix, compile its plan (`caplab.study.plan`), then do
the plan's steps in order for each replicate — make its runtime directory (``{runtime}``: the
servers' data, `caplab.study.runtime`), apply the hardware, start the SUT, run the experiment with
its collectors, stop, clean up — and store the cell.

A failed cell (SUT did not start, died, target unreachable) is recorded with its reason and the
study goes on. Ctrl-C stores what was measured, marks the study interrupted and stops; `resume`
then skips the cells already complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caplab.engine import PlanError, TargetUnreachable, UsageProblem, WorkerFailed
from caplab.engine import run as run_here
from caplab.experiments.base import Experiment, Interrupted, PlanRunner, TrialRecord
from caplab.experiments.capacity import CapacityExperiment, GeneratorSaturated
from caplab.experiments.fixed import FixedLoad
from caplab.experiments.job import JobExperiment, PhaseFailed
from caplab.profiles import CellHardware, ProfileError
from caplab.profiles.placement import placed
from caplab.spec import Cell, Study
from caplab.store import CellRow, Store
from caplab.study.baseline import baseline_line, storage_baseline, volume_baselines
from caplab.study.cell import CellRun
from caplab.study.environment import environment
from caplab.study.hardware import cell_hardware, preflight
from caplab.study.observer import StudyObserver
from caplab.study.plan import CellPlan, plan_cell
from caplab.study.recorder import CellRecorder, cell_figures, partial_figures
from caplab.study.runtime import RuntimeDirError, cell_runtime, sweep_runtime
from caplab.study.sut import SutFailed, sut_environment
from caplab.study.system import RunningSystem
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
        study_id = self.store.find_resumable(self.study.name, self.study.text) if resume else None
        if study_id is None:
            study_id = self.store.create_study(
                self.study.name, self.study.text, str(self.study.path), self._environment(), self._validated()
            )
        else:
            self.store.reopen_study(study_id)
            self.store.add_event(study_id, "resumed", "resuming: complete cells are skipped")
        rows = self.store.add_cells(study_id, [c.factors for c in self.study.cells])
        failed = 0
        self.progress.study_started(study_id, self.study, rows)
        try:
            for cell, row in zip(self.study.cells, rows, strict=True):
                if row.status == "complete":
                    self.progress.cell_skipped(cell)
                    continue
                if not self._run_cell(study_id, cell, row):
                    failed += 1
        except (Interrupted, KeyboardInterrupt):
            self.store.add_event(study_id, "interrupted", "stopped by Ctrl-C; finished cells are kept")
            self.store.finish_study(study_id, "interrupted")
            return StudyOutcome(study_id, "interrupted", failed)
        status = "failed" if failed else "complete"
        self.store.finish_study(study_id, status)
        return StudyOutcome(study_id, status, failed)

    def _validated(self) -> dict[str, object] | None:
        """The study as validated, defaults filled in: its first cell's configuration (a default is
        the same in every cell; what a factor varies the report states as the file wrote it)."""
        return self.study.cells[0].config.model_dump(mode="json") if self.study.cells else None

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

    def _run_cell(self, study_id: int, cell: Cell, row: CellRow) -> bool:
        """Runs one cell; True if it completed. Interrupts propagate after the cell is marked."""
        recorder = CellRecorder(self.store, study_id, row)
        recorder.begin()
        self.progress.cell_started(cell)
        done = Replicates()
        try:
            plan = plan_cell(self.study, cell)
            for replicate in range(plan.replicates):
                self._replicate(plan, replicate, recorder, done)
            metrics, resources = cell_figures(
                plan, done.records, done.summaries, done.hardware, done.volume_baseline
            )
            recorder.complete(metrics, resources)
            self.progress.cell_finished(cell, "complete", metrics, resources)
            return True
        except CELL_FAILURES as e:
            metrics_so_far = partial_figures(done.kept, done.hardware)
            recorder.failed(str(e), metrics_so_far)
            self.progress.cell_finished(cell, "failed", metrics_so_far or {}, {}, str(e))
            return False
        except (Interrupted, KeyboardInterrupt):
            recorder.interrupted()
            raise

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
            if plan.replicates > 1:
                self.progress.note(f"replicate {replicate + 1} of {plan.replicates}")
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
        """With a storage baseline asked for, fio on each fresh volume before the system starts."""
        spec = plan.hardware.storage_baseline
        if spec is None or not hw.volume_paths:
            return {}
        roles = {name.split("/", 1)[0] for name in hw.volume_paths}
        baseline = volume_baselines(spec, hw.volume_paths, {r: hw.launch_prefix(r) for r in roles})
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
