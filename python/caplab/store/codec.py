"""Between the engine's result object and the store's rows, both ways, losing nothing.

A trial is stored as a summary (the result without its interval series and histograms), one row
per interval (typed columns, so SQL and notebooks can use them) and one row per histogram. Fields
the store does not know yet travel in the summary or in an interval's ``extra`` so that a newer
engine's output still round-trips: ``rebuild_result(*split_result(raw)) == raw``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

ALL_CLASSES = "*"
HDR_ENCODING = "hdr-v2-base64"
_HDR_SUFFIX = "_hdr"

# Snapshot field → column; the latency summary's fields → columns with their unit.
_INTERVAL_COLUMNS = {
    "index": "idx",
    "start_s": "start_s",
    "end_s": "end_s",
    "warmup": "warmup",
    "sent": "sent",
    "completed": "completed",
    "errors": "errors",
    "dropped": "dropped",
    "in_flight": "in_flight",
    "throughput": "throughput",
}
_LATENCY_COLUMNS = {
    "count": "latency_count",
    "min": "min_ms",
    "mean": "mean_ms",
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p99": "p99_ms",
    "p999": "p999_ms",
    "max": "max_ms",
}


@dataclass(frozen=True)
class Histogram:
    class_name: str
    kind: str
    data: str


@dataclass(frozen=True)
class SplitResult:
    summary: dict[str, Any]
    intervals: list[dict[str, Any]]
    histograms: list[Histogram]


def json_safe(value: Any) -> Any:
    """NaN and ±inf become None: PostgreSQL's JSON rejects them and so would any JSON reader."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _take_histograms(obj: dict[str, Any], class_name: str, into: list[Histogram]) -> dict[str, Any]:
    """``obj`` without its ``*_hdr`` fields, which are appended to ``into``."""
    kept = {}
    for key, value in obj.items():
        if key.endswith(_HDR_SUFFIX) and isinstance(value, str):
            into.append(Histogram(class_name, key.removesuffix(_HDR_SUFFIX), value))
        else:
            kept[key] = value
    return kept


def split_result(raw: dict[str, Any]) -> SplitResult:
    """The engine's result object as a summary, interval rows and histograms."""
    histograms: list[Histogram] = []
    summary = _take_histograms({k: v for k, v in raw.items() if k != "intervals"}, ALL_CLASSES, histograms)
    if "classes" in summary:
        names = [str(c.get("name")) for c in summary["classes"]]
        if len(set(names)) != len(names) or ALL_CLASSES in names:
            raise ValueError(f"request class names must be unique and not {ALL_CLASSES!r}: {names}")
        summary["classes"] = [_take_histograms(c, str(c.get("name")), histograms) for c in summary["classes"]]
    intervals = [_interval_row(i) for i in raw.get("intervals", [])]
    return SplitResult(json_safe(summary), intervals, histograms)


def _interval_row(snapshot: dict[str, Any]) -> dict[str, Any]:
    row = {column: snapshot[field] for field, column in _INTERVAL_COLUMNS.items()}
    latency = snapshot["latency_ms"]
    row.update({column: latency.get(field) for field, column in _LATENCY_COLUMNS.items()})
    extra = {k: v for k, v in snapshot.items() if k not in _INTERVAL_COLUMNS and k != "latency_ms"}
    extra_latency = {k: v for k, v in latency.items() if k not in _LATENCY_COLUMNS}
    if extra_latency:
        extra["latency_ms"] = extra_latency
    row["extra"] = json_safe(extra) if extra else None
    return row


def rebuild_interval(row: dict[str, Any]) -> dict[str, Any]:
    """One snapshot as the engine reported it, from its stored row."""
    snapshot = {field: row[column] for field, column in _INTERVAL_COLUMNS.items()}
    snapshot["warmup"] = bool(snapshot["warmup"])
    latency = {field: row[column] for field, column in _LATENCY_COLUMNS.items()}
    extra = dict(row.get("extra") or {})
    latency.update(extra.pop("latency_ms", {}))
    snapshot.update(extra)
    snapshot["latency_ms"] = latency
    return snapshot


def _with_histograms(obj: dict[str, Any], hdrs: dict[str, str]) -> dict[str, Any]:
    """``obj`` with its ``KIND_hdr`` fields after the last ``*_ms`` summary, where the engine puts them."""
    keys = list(obj)
    at = max((i for i, k in enumerate(keys) if k.endswith("_ms")), default=len(keys) - 1)
    out: dict[str, Any] = {}
    for i, key in enumerate(keys):
        out[key] = obj[key]
        if i == at:
            out.update({kind + _HDR_SUFFIX: data for kind, data in hdrs.items()})
    for kind, data in hdrs.items():
        out.setdefault(kind + _HDR_SUFFIX, data)
    return out


def rebuild_result(
    summary: dict[str, Any], intervals: list[dict[str, Any]], histograms: list[Histogram]
) -> dict[str, Any]:
    """The engine's result object (``caplab load --json`` without ``target``) from stored parts."""
    by_class: dict[str, dict[str, str]] = {}
    for h in histograms:
        by_class.setdefault(h.class_name, {})[h.kind] = h.data
    result = _with_histograms(summary, by_class.get(ALL_CLASSES, {}))
    if "classes" in result:
        result["classes"] = [
            _with_histograms(c, by_class.get(str(c.get("name")), {})) for c in result["classes"]
        ]
    series = [rebuild_interval(r) for r in sorted(intervals, key=lambda r: int(r["idx"]))]
    ordered: dict[str, Any] = {}
    for key, value in result.items():
        if key in INTERVALS_BEFORE and "intervals" not in ordered:
            ordered["intervals"] = series
        ordered[key] = value
    ordered.setdefault("intervals", series)
    return ordered


INTERVALS_BEFORE = ("per_target", "generator")
"""The keys that follow ``intervals`` in the engine's result (engine/src/result.rs): the series goes
back where the engine put it, so a rebuilt result reads as the engine wrote it."""
