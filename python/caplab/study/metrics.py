"""A cell's metrics over its repeated trials: throughput spread, latency from merged histograms."""

from __future__ import annotations

import statistics
from dataclasses import asdict

from caplab.analysis.steady import littles_law, rate, steadiness
from caplab.engine import RunResult, merge_histograms, summarize_histogram
from caplab.json_types import JsonDict


def cell_metrics(trials: list[RunResult]) -> JsonDict:
    """Throughput as mean and spread of the trials; latency percentiles of all requests together
    (histograms merged, not percentiles averaged — an average of p99s is not a p99)."""
    if not trials:
        return {}
    throughputs = [t.throughput for t in trials]
    latency = summarize_histogram(merge_histograms([t.latency_hdr for t in trials]))
    service = summarize_histogram(merge_histograms([str(t.raw["service_time_hdr"]) for t in trials]))
    sent = sum(t.sent for t in trials)
    errors = sum(t.errors for t in trials)
    offered = [t.offered_rate for t in trials if t.offered_rate is not None]
    judged = [steadiness(t.intervals, t.warmup_s + t.duration_s, t.users) for t in trials]
    cv = statistics.fmean(j.throughput_cv for j in judged)
    last = trials[-1]
    return {
        "trials": len(trials),
        "consistency": {"rating": rate(cv), "throughput_cv": cv},
        "steady": all(j.steady for j in judged),
        "steady_notes": [j.reason for j in judged if not j.steady],
        "littles_law": littles_law(
            last.throughput, last.latency_ms.mean, last.intervals, last.warmup_s + last.duration_s
        ),
        "offered_rate": statistics.fmean(offered) if offered else None,
        "users": trials[0].users,
        "throughput": statistics.fmean(throughputs),
        "throughput_stdev": statistics.stdev(throughputs) if len(throughputs) > 1 else 0.0,
        "throughput_min": min(throughputs),
        "throughput_max": max(throughputs),
        "latency_ms": asdict(latency),
        "service_time_ms": asdict(service),
        "sent": sent,
        "completed": sum(t.completed for t in trials),
        "errors": errors,
        "dropped": sum(t.dropped for t in trials),
        "error_ratio": errors / sent if sent else 0.0,
        "generator_saturated": any(t.generator.saturated for t in trials),
        "generator_cpu_us_per_request": statistics.fmean(
            [t.generator.cpu_us_per_request for t in trials if t.generator.cpu_us_per_request is not None]
            or [0.0]
        ),
    }
