"""A cell's plan: everything the runner needs to run one cell, worked out once from the validated
study and the cell's factors before anything is started, so the runner then only does its steps in
order (apply the hardware, start the system, run the experiment with its collectors, stop, clean up,
store) and never goes back to the study file's model to compute something.

Three things cannot be known before a replicate starts: the paths of the cell's volumes and the
addresses of its links, which the study's commands and URLs name as ``{volume.NAME}`` and
``{address.ROLE}``, and its runtime directory, ``{runtime}``. `CellPlan.on` fills them in once the
hardware and the directory are made; every other figure here is the same before and after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from caplab.analysis.cost import configuration_cost, priced_roles, prices_of
from caplab.collect import MetricsSource, RoleSpec
from caplab.json_types import JsonDict, JsonObject
from caplab.profiles import CellHardware, Profile
from caplab.profiles.design import role_hardware, volume_ratings
from caplab.profiles.placement import CpuPlacement, format_cpus, parse_cpus, plan_placement
from caplab.spec import Cell, JobSpec, StorageBaselineSpec, Study, StudyConfig, SutSpec
from caplab.spec.study import IsolationSpec
from caplab.study.hardware import bind, launched_role, shared_machines
from caplab.study.runtime import with_runtime
from caplab.study.schedule import Budget
from caplab.workloads.postgres import with_passfile_under

ExperimentKind = Literal["fixed", "capacity", "job"]


def frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a fresh copy: a plan's mappings cannot change under the runner."""
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class HardwarePlan:
    """What the cell's roles run on, described before anything is made."""

    profiles: Mapping[str, Profile]
    """``{role: Profile}`` for each role the cell puts on a profile (empty: no hardware to make)."""
    cpu_scale: float
    shared: Mapping[str, str]
    """``{role: machine}`` for roles that share one machine's profile."""
    launched: str | None
    """The role whose launch prefix the start command runs under, if one plainly owns it."""
    attach: Mapping[str, str]
    """``{role: match}``: the roles whose processes are found by polling and put on their profile."""
    storage_baseline: StorageBaselineSpec | None
    """fio on each fresh volume before the system starts (first replicate), when asked for."""
    placement: CpuPlacement
    """The generator's and the system's CPUs (`isolation:`), applied before the hardware is made
    so caplab's daemons start on the generator's."""


@dataclass(frozen=True)
class SutPlan:
    """How the system under test starts, stops and is known to be ready."""

    spec: SutSpec | None
    """Start, stop, ready and metrics; None when caplab does not start the system."""
    roles: tuple[RoleSpec, ...]
    """The declared roles the collectors watch (a started SUT without roles is the role ``sut``)."""


@dataclass(frozen=True)
class CollectorPlan:
    """What the collectors read besides the roles: the SUT's counters, its databases, remote hosts."""

    metrics: MetricsSource | None
    databases: tuple[str, ...]
    hosts: Mapping[str, str]


@dataclass(frozen=True)
class ExperimentPlan:
    """What the cell runs, and how its window and resources are read afterwards."""

    kind: ExperimentKind
    repeat: int
    """Trials of a fixed load per replicate (what progress counts a trial against)."""
    job: JobSpec | None
    window: tuple[float | None, float | None]
    """The measured part of a trial (after warmup), over which resources are summarised."""
    metrics_url: str | None
    """The SUT's metrics URL, which a job reads its counters from."""


@dataclass(frozen=True)
class CellPlan:
    """One cell, compiled: the steps' inputs, in the order the runner uses them."""

    cell: Cell
    directory: Path
    """The study's directory: relative paths in the study file are under it."""
    replicates: Budget
    """How many replicates the cell runs (a count, or enough for its interval)."""
    hardware: HardwarePlan
    sut: SutPlan
    collectors: CollectorPlan
    experiment: ExperimentPlan
    prices: JsonObject
    """``cost`` and ``ratings``, added to the cell's metrics as they are."""
    config: StudyConfig
    """The cell's configuration, bound to its hardware once made: what the experiment, the load
    and the failover reading are given."""

    def on(self, hw: CellHardware | None, runtime: Path | None = None) -> CellPlan:
        """The plan with ``{volume.NAME}`` and ``{address.ROLE}`` filled in from the made hardware,
        and ``{runtime}`` with the replicate's runtime directory (`caplab.study.runtime`)."""
        config = bind(self.config, hw)
        if runtime is not None:
            config = with_runtime(config, runtime)
        if config is self.config:
            return self
        return replace(
            self,
            config=config,
            sut=_sut(config, self.directory),
            collectors=_collectors(config, self.directory),
            experiment=_experiment(config),
        )


def plan_cell(study: Study, cell: Cell) -> CellPlan:
    """The cell's plan, from the validated study and the cell's factors. Raises ``ProfileError``
    for hardware that cannot be applied as written (two roles with a link)."""
    config = cell.config
    return CellPlan(
        cell=cell,
        directory=study.directory,
        replicates=Budget.of(config.replicates),
        hardware=_hardware(config),
        sut=_sut(config, study.directory),
        collectors=_collectors(config, study.directory),
        experiment=_experiment(config),
        prices=frozen(_prices(config, cell.factors)),
        config=config,
    )


def _hardware(config: StudyConfig) -> HardwarePlan:
    profiles = role_hardware(config)
    launched = launched_role(config, profiles) if profiles else None
    declared = config.sut.roles if config.sut else {}
    attach = {
        role: spec.match
        for role, spec in declared.items()
        if role in profiles and role != launched and spec.match
    }
    return HardwarePlan(
        profiles=frozen(profiles),
        cpu_scale=config.scale.cpu,
        shared=frozen(shared_machines(config)),
        launched=launched,
        attach=frozen(attach),
        storage_baseline=config.storage_baseline,
        placement=cell_placement(config, profiles),
    )


def cell_placement(config: StudyConfig, profiles: Mapping[str, Profile]) -> CpuPlacement:
    """The study's ``isolation``, on this host. Profile quotas are computed within the system's
    CPUs: where one asks for more host CPUs than the system has to itself, they share the host
    rather than throttle the role below what its profile says."""
    isolation = config.isolation
    requested = isolation.model_dump() if isinstance(isolation, IsolationSpec) else isolation
    placement = plan_placement(requested)
    room = placement.system_cpus
    if room is None:
        return placement
    system = set(parse_cpus(placement.system or ""))
    for role, profile in profiles.items():
        wanted = profile.cpus.host_cpus(config.scale.cpu) if profile.cpus else 0.0
        if wanted > room:
            note = f"role {role}'s profile asks for {wanted:g} host CPUs, more than the system's {room}"
            return CpuPlacement(None, None, note)
        pinned = parse_cpus(profile.cpus.cpuset) if profile.cpus and profile.cpus.cpuset else []
        if set(pinned) - system:
            # Pinned beside the generator, the role would share its CPU whatever the placement said.
            note = (
                f"role {role}'s profile pins it to CPUs {format_cpus(pinned)}, beyond the system's "
                f"{placement.system}"
            )
            return CpuPlacement(None, None, note)
    return placement


def _sut(config: StudyConfig, directory: Path) -> SutPlan:
    declared = config.sut.roles if config.sut else {}
    roles = tuple(
        RoleSpec(
            name=n,
            pid=r.pid,
            match=r.match,
            cgroup=r.cgroup,
            host=r.host,
            user=r.user,
            pidfile=str(directory / r.pidfile) if r.pidfile is not None else None,
        )
        for n, r in declared.items()
    )
    return SutPlan(spec=config.sut, roles=roles)


def _collectors(config: StudyConfig, directory: Path) -> CollectorPlan:
    spec = config.sut.metrics if config.sut else None
    metrics = (
        MetricsSource(
            spec.url, dict(spec.rates), dict(spec.gauges), spec.drain, spec.drain_below, spec.drain_timeout
        )
        if spec is not None
        else None
    )
    urls = config.sut.postgres if config.sut else []
    databases = tuple(with_passfile_under(u, directory) for u in urls)
    return CollectorPlan(metrics=metrics, databases=databases, hosts=frozen(config.hosts))


def _experiment(config: StudyConfig) -> ExperimentPlan:
    """A job's phases, a capacity search, or the load as written."""
    kind: ExperimentKind = "job" if config.job is not None else "capacity" if config.search else "fixed"
    load = config.load
    window = (load.warmup, load.warmup + load.duration) if load else (None, None)
    metrics_url = config.sut.metrics.url if config.sut and config.sut.metrics else None
    return ExperimentPlan(
        kind=kind,
        repeat=load.repeat if load else 1,
        job=config.job,
        window=window,
        metrics_url=metrics_url,
    )


def _prices(config: StudyConfig, factors: Mapping[str, Any]) -> JsonDict:
    """The cell's price (``cost``) and its volumes' endurance ratings (``ratings``), when the study
    gives them: the report prices capacity and ages drives from these."""
    out: JsonDict = {}
    if config.cost is not None:
        roles = priced_roles(config.role_profiles(), shared_machines(config), config.profiles, config.devices)
        out["cost"] = configuration_cost(prices_of(config.cost), dict(factors), roles).as_dict()
    rated = {
        volume: {"class": vclass, "size": v.size, "dwpd": v.dwpd, "years": v.years, "tbw": v.tbw}
        for volume, (vclass, v) in volume_ratings(config).items()
        if v.tbw is not None or (v.dwpd is not None and v.years is not None)
    }
    if rated:
        out["ratings"] = rated
    return out
