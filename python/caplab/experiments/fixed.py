"""The fixed-load experiment: the study's load as written, repeated."""

from __future__ import annotations

import statistics

from caplab.engine import RunResult, merge_histograms, summarize_histogram
from caplab.experiments.base import CellContext, TrialRecord
from caplab.json_types import JsonDict

PERCENTILES = ("p50", "p90", "p95", "p99")
"""The latency percentiles a fixed-load cell gives across its replicates (p99.9 needs more
requests than one short run holds: it is left to the merged histogram of all runs)."""


class FixedLoad:
    """Runs the cell's plan ``repeat`` times; each run is a trial of the cell, built afresh so that
    each draws its own arrivals (a repeat of one realisation would measure nothing new of them)."""

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        records = [ctx.trial(ctx.plan(), i, "fixed") for i in range(self.repeat)]
        ctx.summary["fixed"] = replicate_figures([r.result for r in records])
        return records


def replicate_figures(trials: list[RunResult]) -> JsonDict:
    """One replicate's headline figures, over its trials: the mean throughput, the latency
    percentiles of its requests together (histograms merged) and its error ratio. The cell gives
    their mean over replicates with an interval (``capacity.replicates.combine_replicates``)."""
    if not trials:
        return {}
    latency = summarize_histogram(merge_histograms([t.latency_hdr for t in trials]))
    sent = sum(t.sent for t in trials)
    return {
        "trials": len(trials),
        "throughput": statistics.fmean(t.throughput for t in trials),
        "latency_ms": {p: getattr(latency, p) for p in PERCENTILES},
        "error_ratio": sum(t.errors for t in trials) / sent if sent else 0.0,
        "generator_saturated": any(t.generator.saturated for t in trials),
    }
