"""The fixed-load experiment: the study's load as written, repeated."""

from __future__ import annotations

from caplab.experiments.base import CellContext, TrialRecord


class FixedLoad:
    """Runs the cell's plan ``repeat`` times; each run is a trial of the cell, built afresh so that
    each draws its own arrivals (a repeat of one realisation would measure nothing new of them)."""

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        return [ctx.trial(ctx.plan(), i, "fixed") for i in range(self.repeat)]
