"""Running trials inside a cell: one engine run with the collectors sampling on its clock.

`CellProcedure` is the seam where a cell decides which trials to run: `FixedLoad` runs the
study's load `repeat` times; a capacity search plugs in here as another procedure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, Plan, RunResult, run

if TYPE_CHECKING:
    from caplab.collect import MetricsSource, RoleSpec
    from caplab.load import LoadOptions


class Interrupted(Exception):
    """Ctrl-C during a trial: what was measured is stored, then the study stops."""


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


def run_trial(plan: Plan, collectors: SamplerSet, progress: ProgressFn | None = None) -> TrialRecord:
    """Runs one plan; every interval snapshot triggers a resource sample at the same instant."""
    samples: list[ResourceSample] = []

    def on_interval(snapshot: IntervalSnapshot) -> bool | None:
        fresh = collectors.sample(snapshot.end_s)
        samples.extend(fresh)
        return progress(snapshot, fresh) if progress is not None else None

    collectors.start()
    try:
        result = run(plan, on_interval)
    finally:
        collectors.stop()
    return TrialRecord(result, samples)


class CellContext(Protocol):
    """What a procedure may do inside a cell: build a plan, run and keep trials, add to the cell's
    metrics (``summary``)."""

    roles: list[RoleSpec]
    metrics: MetricsSource | None
    summary: dict[str, Any]
    progress: Any

    def options(self) -> LoadOptions: ...

    def plan(self) -> Plan: ...

    def trial(self, plan: Plan, index: int, kind: str) -> TrialRecord:
        """Runs, stores and checks one trial; raises Interrupted or SutFailed."""
        ...

    def keep(self, record: TrialRecord) -> None:
        """Stores a trial run elsewhere (a search's); raises Interrupted or SutFailed."""
        ...

    def watch(self, snapshot: IntervalSnapshot, samples: list[ResourceSample]) -> bool:
        """The progress callback for a trial: False stops it (the SUT died)."""
        ...


class CellProcedure(Protocol):
    def run(self, ctx: CellContext) -> list[TrialRecord]: ...


class FixedLoad:
    """The study's load as written, repeated."""

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        plan = ctx.plan()
        return [ctx.trial(plan, i, "fixed") for i in range(self.repeat)]
