"""What a cell runs: the `Experiment` interface, the `CellContext` it works through, and one
trial — an engine run with the collectors sampling on its clock.

Every kind of experiment (fixed load, capacity search; later jobs and failover) is one module of
this package behind `Experiment.run(ctx)`; the study runner knows nothing else about them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, Plan, RunResult, run
from caplab.experiments.alongside import PlanRunner as PlanRunner
from caplab.experiments.alongside import run_alongside
from caplab.json_types import JsonDict

if TYPE_CHECKING:
    from caplab.collect import MetricsSource, RoleSpec
    from caplab.engine import LoadSpec


class Interrupted(Exception):
    """Ctrl-C during a trial: what was measured is stored, then the study stops."""


@dataclass(frozen=True)
class SystemFault:
    """A trial the system did not survive for a reason that belongs to the load, not to the cell:
    a role ran out of its profile's memory (the OOM killer). A search takes it as a failure at that
    load, and the system is started afresh before the next trial — as a fixed load's cell it fails."""

    reason: str
    resource: str
    """The resource that gave out, in the limit analysis's names (``memory:ROLE``)."""


class SamplerSet(Protocol):
    def start(self) -> None: ...
    def sample(self, t: float) -> list[ResourceSample]: ...
    def stop(self) -> None: ...


@dataclass
class TrialRecord:
    result: RunResult
    samples: list[ResourceSample] = field(default_factory=list)
    kind: str = "fixed"


ProgressFn = Callable[[IntervalSnapshot, list[ResourceSample]], bool | None]
"""Sees each interval with its resource samples; returning False stops the trial early."""


def run_trial(
    plan: Plan,
    collectors: SamplerSet,
    progress: ProgressFn | None = None,
    on_start: Callable[[], None] | None = None,
    runner: PlanRunner = run,
) -> TrialRecord:
    """Runs one plan; every interval snapshot triggers a resource sample at the same instant.
    ``on_start`` is called as the load starts (a trial's actions take their clock from it);
    ``runner`` runs the plan (the engine here, unless the trial runs on load agents)."""
    samples: list[ResourceSample] = []

    def on_interval(snapshot: IntervalSnapshot) -> bool | None:
        fresh = collectors.sample(snapshot.end_s)
        samples.extend(fresh)
        return progress(snapshot, fresh) if progress is not None else None

    collectors.start()
    try:
        if on_start is not None:
            on_start()
        result = run_alongside(plan, on_interval, runner)
    finally:
        collectors.stop()
    return TrialRecord(result, samples)


class CellContext(Protocol):
    """What an experiment may do inside a cell: build a plan, run and keep trials, add to the
    cell's metrics (``summary``)."""

    roles: list[RoleSpec]
    metrics: MetricsSource | None
    summary: JsonDict
    progress: Any
    plan_runner: PlanRunner
    """What runs each trial's plan: the engine here, or load agents on a cluster."""

    @property
    def collectors(self) -> SamplerSet:
        """The cell's resource collectors (a job samples them itself while a phase runs)."""
        ...

    def load_spec(self) -> LoadSpec: ...

    def plan(self) -> Plan: ...

    def trial(self, plan: Plan, index: int, kind: str) -> TrialRecord:
        """Runs, stores and checks one trial; raises Interrupted or SutFailed."""
        ...

    def keep(self, record: TrialRecord) -> None:
        """Stores a trial run elsewhere; raises Interrupted or SutFailed."""
        ...

    def keep_probe(self, record: TrialRecord) -> SystemFault | None:
        """Stores a search's trial. One the system did not survive for want of memory is returned
        as a `SystemFault` once the system has been started afresh; raises Interrupted, or
        SutFailed when the system died otherwise or cannot be started again."""
        ...

    def watch(self, snapshot: IntervalSnapshot, samples: list[ResourceSample]) -> bool:
        """The progress callback for a trial: False stops it (the SUT died)."""
        ...


class Experiment(Protocol):
    """What a cell runs; returns the trials whose figures become the cell's."""

    def run(self, ctx: CellContext) -> list[TrialRecord]: ...
