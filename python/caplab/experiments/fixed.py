"""The fixed-load experiment: the study's load as written, repeated."""

from __future__ import annotations

from caplab.experiments.base import CellContext, TrialRecord


class FixedLoad:
    """Runs the cell's plan ``repeat`` times; each run is a trial of the cell."""

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        plan = ctx.plan()
        return [ctx.trial(plan, i, "fixed") for i in range(self.repeat)]
