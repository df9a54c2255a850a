"""The study runner: for each cell of the matrix, start the SUT, run the cell's trials with the
collectors watching, stop the SUT, store everything.

A failed cell (SUT did not start, died, target unreachable) is recorded with its reason and the
study goes on. Ctrl-C stores what was measured, marks the study interrupted and stops; `resume`
then skips the cells already complete.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from caplab.analysis.cost import configuration_cost, priced_roles, prices_of
from caplab.analysis.failover import Verdict, success_rate
from caplab.collect import MetricsSource, RoleSpec, cell_resources, default_collectors
from caplab.collect.base import ResourceSample
from caplab.engine import (
    IntervalSnapshot,
    LoadSpec,
    Plan,
    PlanError,
    Target,
    TargetUnreachable,
    UsageProblem,
    WorkerFailed,
    build_plan,
)
from caplab.engine import run as run_here
from caplab.experiments.actions import TrialActions
from caplab.experiments.base import (
    Experiment,
    Interrupted,
    PlanRunner,
    SystemFault,
    TrialRecord,
    run_trial,
)
from caplab.experiments.capacity import CapacityExperiment, GeneratorSaturated, combine_replicates
from caplab.experiments.failover import FailoverReading
from caplab.experiments.fixed import FixedLoad
from caplab.experiments.job import JobExperiment, PhaseFailed
from caplab.profiles import CellHardware, ProfileError
from caplab.profiles.design import volume_ratings
from caplab.spec import Cell, Study, StudyConfig
from caplab.store import CellRow, Store
from caplab.study.baseline import baseline_line, storage_baseline, volume_baselines
from caplab.study.environment import environment
from caplab.study.hardware import (
    Attacher,
    bind,
    cell_hardware,
    describe,
    launched_role,
    oom_kills,
    preflight,
    shared_machines,
    with_profiles,
)
from caplab.study.metrics import cell_metrics
from caplab.study.observer import StudyObserver
from caplab.study.sut import Sut, SutFailed, sut_environment
from caplab.study.usage import mail_load, usage_actions
from caplab.workloads.postgres import DatabaseProblem, prepare, with_passfile_under


@dataclass(frozen=True)
class StudyOutcome:
    study_id: int
    status: str
    cells_failed: int


def load_spec_for(config: StudyConfig, directory: Path) -> LoadSpec:
    """One cell's load as a `LoadSpec`, so a study and `caplab load` build plans alike. A
    PostgreSQL target is tried first (``DatabaseProblem`` when it cannot be used)."""
    target_spec, load = config.requests
    pg = target_spec.postgres
    places = pg.places() if pg is not None else [""]
    times = len(places) if load.per_target else 1  # users or rate given per place in the list
    shape = LoadSpec(
        url="",
        rate=load.rate * times if load.open_model and load.rate is not None else None,
        ramp_to=load.ramp_to * times if load.ramp_to is not None else None,
        users=None if load.open_model else (load.users or 10) * times,
        think_s=load.think,
        think_dist=load.think_dist,
        logon_s=load.logon,
        schedule=load.schedule,
        duration_s=load.duration,
        warmup_s=load.warmup,
        threads=load.threads,
        connections=load.connections,
        timeout_s=load.timeout,
        interval_s=load.interval,
    )
    if pg is not None:
        sql_file = directory / pg.sql_file if pg.sql_file else None
        passfile = directory / pg.passfile if pg.passfile else None
        # each database tried once (and its ledger made), however many places it takes
        found = {
            u: prepare(u, pg.workload, sql_file, passfile, ledger=pg.ledger) for u in dict.fromkeys(places)
        }
        first = found[places[0]]
        return replace(
            shape,
            url=first.url,
            password=first.password,
            scale=first.scale,
            workload=first.workload,
            body=first.script,
            extra_targets=tuple(
                Target(found[u].url, None, found[u].password, found[u].scale) for u in places[1:]
            ),
        )
    if target_spec.mail is not None:
        return mail_load(target_spec.mail, shape, load.usage, directory)
    target = target_spec.http or target_spec.tcp
    assert target is not None
    http = target_spec.http
    if load.usage is not None:  # each action brings its own request; the target only its URL
        framing = target_spec.tcp.framing if target_spec.tcp else None
        return replace(shape, url=target.url, framing=framing, usage=usage_actions(load.usage, directory))
    return replace(
        shape,
        url=target.url,
        method=http.method if http else "GET",
        headers=tuple(http.headers.items()) if http else (),
        body=target.body,
        body_file=(directory / target.body_file) if target.body_file else None,
        template=target.template,
        framing=target_spec.tcp.framing if target_spec.tcp else None,
        extra_targets=tuple(
            Target(url, target_spec.tcp.framing if target_spec.tcp else None) for url in target.also
        ),
    )


def priced(config: StudyConfig, factors: dict[str, Any]) -> dict[str, Any]:
    """The cell's price (``cost``) and its volumes' endurance ratings (``ratings``), when the study
    gives them: the report prices capacity and ages drives from these."""
    out: dict[str, Any] = {}
    if config.cost is not None:
        roles = priced_roles(config.role_profiles(), shared_machines(config), config.profiles)
        out["cost"] = configuration_cost(prices_of(config.cost), factors, roles).as_dict()
    rated = {
        volume: {"class": vclass, "size": v.size, "dwpd": v.dwpd, "years": v.years, "tbw": v.tbw}
        for volume, (vclass, v) in volume_ratings(config).items()
        if v.tbw is not None or (v.dwpd is not None and v.years is not None)
    }
    if rated:
        out["ratings"] = rated
    return out


def plan_for(config: StudyConfig, directory: Path) -> Plan:
    return build_plan(load_spec_for(config, directory))


def roles_of(config: StudyConfig, sut: Sut | None) -> list[RoleSpec]:
    """The declared roles; a SUT caplab started and no roles declared is the role ``sut``."""
    declared = config.sut.roles if config.sut else {}
    roles = [
        RoleSpec(name=n, pid=r.pid, match=r.match, cgroup=r.cgroup, host=r.host) for n, r in declared.items()
    ]
    if not roles and sut is not None and sut.pid is not None:
        roles.append(RoleSpec(name="sut", pid=sut.pid))
    return roles


def metrics_of(config: StudyConfig) -> MetricsSource | None:
    """The SUT's own counters to scrape, if the study names any."""
    spec = config.sut.metrics if config.sut else None
    if spec is None:
        return None
    return MetricsSource(
        spec.url, dict(spec.rates), dict(spec.gauges), spec.drain, spec.drain_below, spec.drain_timeout
    )


class CellRun:
    """One cell's run: the `CellContext` its experiment works through."""

    def __init__(
        self,
        runner: StudyRunner,
        cell: Cell,
        row: CellRow,
        sut: Sut | None,
        kept: list[TrialRecord],
        config: StudyConfig | None = None,
        hardware: CellHardware | None = None,
        attacher: Attacher | None = None,
    ) -> None:
        self.runner = runner
        self.cell = cell
        self.config = config or cell.config
        """The cell's configuration bound to its hardware (volumes' paths, links' addresses)."""
        self.row = row
        self.sut = sut
        self.hardware = hardware
        self.attacher = attacher
        self.oom_baseline = oom_kills(hardware) if hardware is not None else {}
        self.oom_fault: SystemFault | None = None
        self.roles = with_profiles(roles_of(self.config, sut), hardware)
        self.metrics = metrics_of(self.config)
        urls = self.config.sut.postgres if self.config.sut else []
        nodes = [with_passfile_under(u, runner.study.directory) for u in urls]
        self.collectors = default_collectors(self.roles, self.metrics, nodes, self.config.hosts)
        self.records = kept
        """Every trial of the cell so far, across its replicates (shared by their runs)."""
        self.summary: dict[str, Any] = {}
        self.progress = runner.progress
        self.plan_runner = runner.plan_runner
        self.volume_baseline: dict[str, dict[str, Any]] = {}
        """fio on each of the cell's volumes, measured before its system started (first replicate)."""
        self.failover = FailoverReading(
            self.config.target.postgres if self.config.target else None,
            self.config.recovery,
            runner.study.directory,
            note=lambda line: self.progress.note(line),
            event=lambda line: runner.store.add_event(row.study_id, "action", line, cell_id=row.id),
        )
        """What each trial's actions, ledger and failover add to the cell's metrics."""

    def stop(self) -> None:
        if self.attacher is not None:
            self.attacher.stop()
        if self.sut is not None:
            self.sut.stop()

    def load_spec(self) -> LoadSpec:
        """The cell's load, seeded by the trial's place in the cell (across its replicates): each
        trial draws its own Poisson arrivals and mix, and a rerun of the study draws the same."""
        return replace(load_spec_for(self.config, self.runner.study.directory), seed=len(self.records))

    def oom_killed(self) -> str | None:
        """Why the trial failed if the OOM killer killed a process of a role on a memory limit."""
        fault = self._oom_fault()
        return fault.reason if fault is not None else None

    def _oom_fault(self) -> SystemFault | None:
        if self.hardware is None or self.oom_fault is not None:
            return self.oom_fault
        for role, kills in oom_kills(self.hardware).items():
            new = kills - self.oom_baseline.get(role, 0)
            if new > 0:
                limit = self.hardware.profiles[role].memory
                size = f" of {limit.limit_bytes / 2**20:,.0f} MB" if limit is not None else ""
                self.oom_fault = SystemFault(
                    f"role {role} ran out of memory: the OOM killer killed {new}"
                    f" process(es) at its profile's limit{size}",
                    f"memory:{role}",
                )
        return self.oom_fault

    def keep_probe(self, record: TrialRecord) -> SystemFault | None:
        """Stores a search's trial; a trial the OOM killer ended is the load's failure, and the
        system is started afresh (on the same hardware) for the next one. Other deaths end the cell."""
        try:
            self.keep(record)
        except SutFailed:
            fault = self.oom_fault
            if fault is None:
                raise
            self.progress.note(f"{fault.reason} (trial {len(self.records)}); starting the system afresh")
            self.restart()
            return fault
        return None

    def restart(self) -> None:
        """Stops the system and starts it again, ready; the OOM count starts from here. The
        attacher keeps running and puts the new processes on their profiles."""
        if self.sut is not None:
            self.sut.restart()
        if self.hardware is not None:
            self.oom_baseline = oom_kills(self.hardware)
        self.oom_fault = None

    def hardware_summary(self) -> dict[str, Any] | None:
        if self.hardware is None:
            return None
        launched = self.sut.launched_role if self.sut is not None else None
        return describe(self.config, self.hardware, launched, self.attacher)

    def plan(self) -> Plan:
        return build_plan(self.load_spec())

    def trial(self, plan: Plan, index: int, kind: str) -> TrialRecord:
        self.progress.trial_started(index, self.cell.config.requests[1].repeat, plan)
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
            self.summary.setdefault(key, []).extend(entries)  # len(self.records): across replicates
        self.keep(record)
        return record

    def _actions(self) -> TrialActions | None:
        if not self.config.actions:
            return None
        declared = self.config.sut.actions if self.config.sut else {}
        return TrialActions(self.config.actions, declared, self.runner.study.directory, sut_environment())

    def watch(self, snapshot: IntervalSnapshot, samples: list[ResourceSample]) -> bool:
        """Shows progress; stops the trial at once when the SUT has died (no point measuring
        connection errors for the rest of it)."""
        self.progress.interval(snapshot, samples)
        if self.oom_killed():
            return False
        return self.sut is None or self.sut.alive()

    def keep(self, record: TrialRecord) -> None:
        """Stores a finished trial, then stops the cell if it was interrupted or the SUT died."""
        index = sum(1 for r in self.records if r.kind == record.kind)
        oom = self.oom_killed()
        died = oom is not None or (self.sut is not None and not self.sut.alive())
        interrupted = record.result.interrupted and not died
        status = "failed" if died else "interrupted" if interrupted else "complete"
        store = self.runner.store
        store.save_trial(self.row.id, index, record.result, record.samples, kind=record.kind, status=status)
        self.records.append(record)
        self.progress.trial_finished(record.kind, record.result, record.samples)
        if interrupted:
            raise Interrupted()
        if oom is not None:
            raise SutFailed(f"{oom} (trial {len(self.records)})")
        if died:
            assert self.sut is not None
            raise SutFailed(self.sut.exit_message(f"during trial {len(self.records)}"))


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
        for swept in preflight(self.study):
            self.progress.note(f"removed a leftover of an earlier run: {swept}")
        study_id = self.store.find_resumable(self.study.name, self.study.text) if resume else None
        if study_id is None:
            study_id = self.store.create_study(
                self.study.name, self.study.text, str(self.study.path), self._environment()
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
        if row.status != "pending":
            self.store.reset_cell(row.id)  # an earlier attempt's trials would mix with this one's
        self.store.set_cell_status(row.id, "running")
        self.progress.cell_started(cell)
        config = cell.config
        kept: list[TrialRecord] = []
        records: list[TrialRecord] = []
        summaries: list[dict[str, Any]] = []
        hardware: dict[str, Any] | None = None
        volume_baseline: dict[str, dict[str, Any]] = {}
        try:
            for replicate in range(config.replicates):
                # A fresh start of the system per replicate: what varies from run to run is what
                # an interval a decision rests on must contain. Its hardware is made before the
                # system starts and removed after it stops, whatever happens in between.
                with cell_hardware(config, self._hardware_dir(cell)) as hw:
                    ctx = self._replicate(cell, row, kept, replicate, hw)
                    experiment = self._experiment(ctx.config, ctx)
                    try:
                        records += experiment.run(ctx)
                    finally:
                        ctx.stop()
                        hardware = ctx.hardware_summary() or hardware
                        volume_baseline = volume_baseline or ctx.volume_baseline
                summaries.append(ctx.summary)
            metrics = {**cell_metrics([r.result for r in records]), **combine_replicates(summaries)}
            failovers = [f for f in metrics.get("failover", []) if "verdict" in f]
            if judged := [(str(f["trial"]), Verdict(**f["verdict"])) for f in failovers]:
                metrics["success"] = success_rate(judged).as_dict()  # k/K over the cell's failovers
            if hardware is not None:
                metrics["hardware"] = hardware | (
                    {"volume_baseline": volume_baseline} if volume_baseline else {}
                )
            samples = [s for r in records for s in r.samples]
            window = (
                (config.load.warmup, config.load.warmup + config.load.duration)
                if config.load
                else (None, None)
            )
            resources = cell_resources(samples, *window)
            if config.job is not None:  # a job's resources are its phases', sampled by the job
                resources = metrics["job"].pop("resources", {})
            if "app" in resources:
                metrics["app"] = resources["app"]  # what the SUT says it did, beside what caplab saw
            metrics |= priced(config, cell.factors)
            self.store.set_cell_status(row.id, "complete", metrics=metrics, resources=resources)
            self.progress.cell_finished(cell, "complete", metrics, resources)
            return True
        except (
            SutFailed,
            TargetUnreachable,
            PlanError,
            UsageProblem,
            GeneratorSaturated,
            ProfileError,
            DatabaseProblem,
            PhaseFailed,
            WorkerFailed,
        ) as e:
            self._fail(study_id, cell, row, str(e), kept, hardware)
            return False
        except (Interrupted, KeyboardInterrupt):
            self.store.set_cell_status(row.id, "interrupted", error="interrupted by Ctrl-C")
            raise

    def _experiment(self, config: StudyConfig, ctx: CellRun) -> Experiment:
        """What the cell runs: a job's phases, a capacity search, or the load as written."""
        if config.job is not None:
            roles = [r.name for r in ctx.roles]
            role, hw = config.job.role, ctx.hardware
            prefix = (
                hw.launch_prefix(role) if role is not None and hw is not None and role in hw.profiles else []
            )
            metrics = config.sut.metrics.url if config.sut and config.sut.metrics else None
            return JobExperiment(config.job, self.study.directory, sut_environment(), roles, prefix, metrics)
        if config.search is not None:
            return CapacityExperiment(config)
        return FixedLoad(config.requests[1].repeat)

    def _hardware_dir(self, cell: Cell) -> Path:
        """Where a cell's volumes are made: under the study's directory, removed after the cell."""
        return self.study.directory / ".caplab-hardware" / f"cell-{cell.index}"

    def _replicate(
        self, cell: Cell, row: CellRow, kept: list[TrialRecord], replicate: int, hw: CellHardware | None
    ) -> CellRun:
        """Starts the system for one replicate of the cell on its hardware; the `CellRun` stops it."""
        config = bind(cell.config, hw)
        if config.replicates > 1:
            self.progress.note(f"replicate {replicate + 1} of {config.replicates}")
        if hw is not None and replicate == 0:
            for role, lines in hw.describe().items():
                self.progress.note(f"{role} on {', '.join(lines)}")
        baseline = self._volume_baseline(config, hw) if hw is not None and replicate == 0 else {}
        launched = launched_role(config, hw) if hw is not None else None
        prefix = hw.launch_prefix(launched) if hw is not None and launched is not None else []
        sut = Sut(config.sut, self.study.directory, prefix, launched) if config.sut else None
        attacher = None
        if hw is not None and config.sut is not None:
            matches = {
                role: spec.match
                for role, spec in config.sut.roles.items()
                if role in hw.profiles and role != launched and spec.match
            }
            attacher = Attacher(hw, matches) if matches else None
        try:
            if sut is not None:
                sut.start()
                if attacher is not None:
                    attacher.start()
                sut.wait_ready()
        except BaseException:
            if attacher is not None:
                attacher.stop()
            if sut is not None:
                sut.stop()
            raise
        run = CellRun(self, cell, row, sut, kept, config, hw, attacher)
        run.volume_baseline = baseline
        return run

    def _volume_baseline(self, config: StudyConfig, hw: CellHardware) -> dict[str, dict[str, Any]]:
        """With a storage baseline asked for, fio on each fresh volume before the system starts."""
        spec = config.storage_baseline
        if spec is None or not hw.volume_paths:
            return {}
        roles = {name.split("/", 1)[0] for name in hw.volume_paths}
        baseline = volume_baselines(spec, hw.volume_paths, {r: hw.launch_prefix(r) for r in roles})
        for name, figures in baseline.items():
            self.progress.note(baseline_line(figures, f"volume {name}"))
        return baseline

    def _fail(
        self,
        study_id: int,
        cell: Cell,
        row: CellRow,
        reason: str,
        records: list[TrialRecord],
        hardware: dict[str, Any] | None = None,
    ) -> None:
        """Records a failed cell, keeping the metrics of any trials it completed."""
        metrics: dict[str, Any] | None = cell_metrics([r.result for r in records]) if records else None
        if hardware is not None:
            metrics = {**(metrics or {}), "hardware": hardware}
        self.store.set_cell_status(row.id, "failed", error=reason, metrics=metrics)
        self.store.add_event(study_id, "cell_failed", reason, cell_id=row.id)
        self.progress.cell_finished(cell, "failed", metrics or {}, {}, reason)
