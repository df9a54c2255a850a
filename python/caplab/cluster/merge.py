"""Merging the results of N load agents into one result, exactly where the figures allow it.

Counts add; the HDR histograms (V2-encoded by the engine) merge, and the run's and each class's
latency summaries are read again from the merged histogram; interval series merge by index, as
do the per-target series; errors by kind add. An interval carries a summary but no histogram, so
an interval's merged percentiles are the highest any agent saw in it (an upper bound), its mean
the count-weighted mean. The merged generator figures add what adds (threads, CPU, connections,
held rate) and keep the worst of the rest; one saturated agent marks the run saturated, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from caplab.engine import RunResult, merge_histograms, summarize_histogram

PERCENTILES = ("p50", "p90", "p95", "p99", "p999")
ADDED = ("sent", "completed", "errors", "dropped", "in_flight_at_end", "throughput")


def merge_results(named: list[tuple[str, RunResult]]) -> RunResult:
    """One result for the whole load from each agent's (name, result); at least one is needed."""
    if not named:
        raise ValueError("no agent returned a result to merge")
    raws = [r.raw for _, r in named]
    first = raws[0]
    merged: dict[str, Any] = dict(first)
    merged["offered_rate"] = _sum_or_none(raw["offered_rate"] for raw in raws)
    merged["users"] = _sum_or_none(raw["users"] for raw in raws)
    merged["max_in_flight"] = _sum_or_none(raw["max_in_flight"] for raw in raws)
    merged["duration_s"] = max(raw["duration_s"] for raw in raws)
    merged["warmup_s"] = max(raw["warmup_s"] for raw in raws)
    for key in ADDED:
        merged[key] = sum(raw[key] for raw in raws)
    merged.update(_merged_histograms(raws))
    merged["errors_by_kind"] = add_counts(raw["errors_by_kind"] for raw in raws)
    merged["error_samples"] = _first_samples(raw.get("error_samples", {}) for raw in raws)
    merged["classes"] = _merged_classes(raws)
    merged["intervals"] = merge_intervals([raw["intervals"] for raw in raws])
    merged["per_target"] = _merged_targets(raws)
    merged["generator"] = merge_generators([(name, r.raw["generator"]) for name, r in named])
    merged["interrupted"] = any(raw["interrupted"] for raw in raws)
    return RunResult.from_json(json.dumps(merged))


def add_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts by kind, added across agents."""
    total: dict[str, int] = {}
    for by_kind in counts:
        for kind, n in by_kind.items():
            total[kind] = total.get(kind, 0) + n
    return total


def merge_latency(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Summaries without their histograms: counts add, min and max are exact, the mean is
    count-weighted, each percentile the highest seen (an upper bound on the merged one)."""
    seen = [s for s in summaries if s["count"]]
    count = sum(s["count"] for s in seen)
    merged: dict[str, Any] = {"count": count}
    merged["min"] = min((s["min"] for s in seen if s["min"] is not None), default=None)
    merged["max"] = max((s["max"] for s in seen if s["max"] is not None), default=None)
    means = [(s["mean"], s["count"]) for s in seen if s["mean"] is not None]
    merged["mean"] = sum(m * n for m, n in means) / sum(n for _, n in means) if means else None
    for p in PERCENTILES:
        # .get: an agent built before the engine gave p95 has none.
        values = [s[p] for s in seen if s.get(p) is not None]
        merged[p] = max(values) if values else None
    return merged


def merge_intervals(series: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Interval series merged by index: what every agent measured in its interval i, together.
    An index only some agents reached (one stopped early) merges what those agents have."""
    by_index: dict[int, list[dict[str, Any]]] = {}
    for intervals in series:
        for interval in intervals:
            by_index.setdefault(interval["index"], []).append(interval)
    return [_merged_interval(by_index[i]) for i in sorted(by_index)]


def _merged_interval(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged = dict(parts[0])
    for key in ("sent", "completed", "errors", "dropped", "in_flight", "throughput"):
        merged[key] = sum(p[key] for p in parts)
    merged["latency_ms"] = merge_latency([p["latency_ms"] for p in parts])
    return merged


def merge_generators(named: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The generator as a whole: threads, CPU, connections, TLS handshakes and held rate add; CPU
    per request is the total over all requests; lateness and the busiest thread are the worst
    agent's. A saturated agent saturates the run, its name before its reason."""
    figures = [g for _, g in named]
    requests = sum(g["cpu_s"] * 1e6 / g["cpu_us_per_request"] for g in figures if g["cpu_us_per_request"])
    cpu_s = sum(g["cpu_s"] for g in figures)
    reasons = [f"{name}: {g['saturation_reason'] or 'saturated'}" for name, g in named if g["saturated"]]
    return {
        "threads": sum(g["threads"] for g in figures),
        "cpu_s": cpu_s,
        "cpu_us_per_request": cpu_s * 1e6 / requests if requests else None,
        "lateness_p99_ms": _max_or_none(g["lateness_p99_ms"] for g in figures),
        "lateness_max_ms": _max_or_none(g["lateness_max_ms"] for g in figures),
        "held_rate": _sum_or_none(g.get("held_rate") for g in figures),
        "busiest_thread": max(g["busiest_thread"] for g in figures),
        "connections_opened": sum(g["connections_opened"] for g in figures),
        "tls_handshakes": _sum_or_none(g.get("tls_handshakes") for g in figures),
        "tls_resumed": _sum_or_none(g.get("tls_resumed") for g in figures),
        "tls_handshakes_per_s": _sum_or_none(g.get("tls_handshakes_per_s") for g in figures),
        "saturated": bool(reasons),
        "saturation_reason": "; ".join(reasons) if reasons else None,
    }


def _merged_histograms(raws: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name in ("latency", "service_time"):
        hdr = merge_histograms([raw[f"{name}_hdr"] for raw in raws])
        merged[f"{name}_hdr"] = hdr
        merged[f"{name}_ms"] = _summary(hdr)
    return merged


def _summary(hdr: str) -> dict[str, Any]:
    s = summarize_histogram(hdr)
    return {k: getattr(s, k) for k in ("count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max")}


def _merged_classes(raws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for raw in raws:
        for c in raw.get("classes", []):
            by_name.setdefault(c["name"], []).append(c)
    classes = []
    for parts in by_name.values():
        merged = dict(parts[0])
        for key in ("sent", "completed", "errors"):
            merged[key] = sum(p[key] for p in parts)
        merged.update(_merged_histograms(parts))
        classes.append(merged)
    return classes


def _merged_targets(raws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-target series by position (every agent ran the same targets in the same order)."""
    series = [raw.get("per_target", []) for raw in raws]
    merged = []
    for parts in zip(*series, strict=True):
        target = dict(parts[0])
        target["completed"] = sum(p["completed"] for p in parts)
        target["errors"] = sum(p["errors"] for p in parts)
        target["intervals"] = [
            {
                **slices[0],
                "completed": sum(s["completed"] for s in slices),
                "errors": sum(s["errors"] for s in slices),
            }
            for slices in zip(*(p["intervals"] for p in parts), strict=False)
        ]
        merged.append(target)
    return merged


def _first_samples(samples: Iterable[dict[str, str]]) -> dict[str, str]:
    first: dict[str, str] = {}
    for by_kind in samples:
        for kind, text in by_kind.items():
            first.setdefault(kind, text)
    return first


def _sum_or_none(values: Iterable[float | int | None]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _max_or_none(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None
