"""The `search:` procedure: each cell gets its capacity and its limit instead of a fixed load."""

from __future__ import annotations

from caplab.analysis.capacity import GeneratorSaturated, Probe
from caplab.analysis.find import FindSettings, find_capacity
from caplab.analysis.probe import TrialShape
from caplab.spec import StudyConfig
from caplab.study.trials import CellContext, TrialRecord


class SearchLoad:
    def __init__(self, config: StudyConfig) -> None:
        assert config.search is not None
        s = config.search
        load = config.load
        self.closed = not load.open_model
        self.settings = FindSettings(
            slos=tuple(config.slos),
            precision=s.precision,
            closed=self.closed,
            start=s.start or (float(load.users or 1) if self.closed else load.rate or 100.0),
            maximum=s.max or (10_000.0 if self.closed else 1_000_000.0),
            trial=TrialShape(s.trial, min(load.warmup, s.trial) if load.warmup else 1.0),
            confirm=TrialShape(s.confirm or load.duration, load.warmup or 1.0),
            repeats=s.repeats,
        )

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        confirmations: list[TrialRecord] = []

        def keep(record: TrialRecord, probe: Probe) -> None:
            ctx.keep(record)
            if probe.phase == "confirm" and probe.passed:
                confirmations.append(record)

        doc = find_capacity(
            ctx.options(), self.settings, ctx.roles, on_trial=keep, on_probe=ctx.watch, metrics=ctx.metrics
        )
        if doc.get("generator_saturated"):
            raise GeneratorSaturated(str(doc["message"]))
        ctx.summary["capacity"] = {k: v for k, v in doc.items() if k not in ("limit", "trials")}
        ctx.summary["search_trials"] = doc["trials"]
        ctx.summary["limit"] = doc.get("limit")
        if not doc["found"]:
            return []
        # The cell's throughput and latency are those of the confirmation trials at capacity.
        load = doc["capacity_users"] if self.closed else doc["capacity_rps"]
        at_capacity = [
            r for r in confirmations if (r.result.users if self.closed else r.result.offered_rate) == load
        ]
        return at_capacity or confirmations
