"""The `search:` experiment: each cell gets its capacity and its limit instead of a fixed load."""

from __future__ import annotations

from caplab.experiments.base import CellContext, SystemFault, TrialRecord
from caplab.experiments.capacity.answer import FindSettings, find_capacity
from caplab.experiments.capacity.search import Probe
from caplab.experiments.capacity.trial import TrialLength
from caplab.spec import StudyConfig


class CapacityExperiment:
    """Searches the cell's capacity; the cell's figures are those of the trials at capacity."""

    def __init__(self, config: StudyConfig) -> None:
        assert config.search is not None
        s = config.search
        _, load = config.requests
        self.closed = not load.open_model
        self.settings = FindSettings(
            slos=tuple(config.slos),
            precision=s.precision,
            closed=self.closed,
            start=s.start or (float(load.users or 1) if self.closed else load.rate or 100.0),
            maximum=s.max or (10_000.0 if self.closed else 1_000_000.0),
            trial=TrialLength(s.trial, min(load.warmup, s.trial) if load.warmup else 1.0),
            confirm=TrialLength(s.confirm or load.duration, load.warmup or 1.0),
            repeats=s.repeats,
        )

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        confirmations: list[TrialRecord] = []
        passed: list[tuple[float, TrialRecord]] = []

        def keep(record: TrialRecord, probe: Probe) -> SystemFault | None:
            fault = ctx.keep_probe(record)
            if probe.passed and fault is None:
                passed.append((probe.load, record))
                if probe.phase == "confirm":
                    confirmations.append(record)
            return fault

        answer = find_capacity(
            ctx.load_spec(),
            self.settings,
            ctx.roles,
            on_trial=keep,
            on_probe=ctx.watch,
            metrics=ctx.metrics,
            runner=ctx.plan_runner,
            collectors=ctx.collectors,  # the PostgreSQL nodes' lag and the remote hosts' figures too
        )
        ctx.summary |= answer.outcome()
        if answer.generator_saturated:
            # Inconclusive, not failed: the cell completes with "capacity ≥ X (the generator's limit
            # here)" and the generator as its limit; its figures are those of the trials at X.
            floor = answer.capacity_at_least
            return [r for load, r in passed if load == floor]
        if not answer.found:
            return []
        load = answer.capacity_load
        at_capacity = [
            r for r in confirmations if (r.result.users if self.closed else r.result.offered_rate) == load
        ]
        return at_capacity or confirmations
