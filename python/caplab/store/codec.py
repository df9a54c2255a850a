"""Between the engine's result object and the store's rows, both ways, losing nothing.

A trial is stored as a summary (the result without its interval series and histograms), one row
per interval (typed columns, so SQL and notebooks can use them) and one row per histogram. Fields
the store does not know yet travel in the summary or in an interval's ``extra`` so that a newer
engine's output still round-trips: ``rebuild_result(*split_result(raw)) == raw``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from caplab.json_types import JsonObject, JsonRow, JsonValue, as_object

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
    summary: JsonRow
    intervals: list[JsonRow]
    histograms: list[Histogram]


def json_safe(value: object) -> JsonValue:
    """NaN and ±inf become None: PostgreSQL's JSON rejects them and so would any JSON reader."""
    return _json(value, finite=True)


def _column(value: object) -> JsonValue:
    """A value for a typed column (or read from one) as it is: a float column holds NaN."""
    return _json(value, finite=False)


def _json(value: object, finite: bool) -> JsonValue:
    """``value`` as a JSON value; one JSON cannot hold at all is written as its text (the engine's
    output never has one)."""
    if finite and isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v, finite) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v, finite) for v in value]
    return str(value)


def json_safe_object(obj: JsonObject) -> JsonRow:
    """``json_safe`` of a JSON object, which stays one."""
    return {str(k): json_safe(v) for k, v in obj.items()}


def _take_histograms(obj: JsonObject, class_name: str, into: list[Histogram]) -> JsonRow:
    """``obj`` without its ``*_hdr`` fields, which are appended to ``into``."""
    kept: JsonRow = {}
    for key, value in obj.items():
        if key.endswith(_HDR_SUFFIX) and isinstance(value, str):
            into.append(Histogram(class_name, key.removesuffix(_HDR_SUFFIX), value))
        else:
            kept[key] = _column(value)
    return kept


def _objects(value: object) -> list[JsonObject]:
    """A list of JSON objects (``classes``, ``intervals``); anything else in it is left out."""
    return [as_object(v) for v in value if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []


def split_result(raw: JsonObject) -> SplitResult:
    """The engine's result object as a summary, interval rows and histograms."""
    histograms: list[Histogram] = []
    summary = _take_histograms({k: v for k, v in raw.items() if k != "intervals"}, ALL_CLASSES, histograms)
    if "classes" in summary:
        classes = _objects(summary["classes"])
        names = [str(c.get("name")) for c in classes]
        if len(set(names)) != len(names) or ALL_CLASSES in names:
            raise ValueError(f"request class names must be unique and not {ALL_CLASSES!r}: {names}")
        summary["classes"] = [_take_histograms(c, str(c.get("name")), histograms) for c in classes]
    intervals = [_interval_row(i) for i in _objects(raw.get("intervals"))]
    return SplitResult(json_safe_object(summary), intervals, histograms)


def _interval_row(snapshot: JsonObject) -> JsonRow:
    row: JsonRow = {column: _column(snapshot[field]) for field, column in _INTERVAL_COLUMNS.items()}
    latency = as_object(snapshot["latency_ms"])
    row.update({column: _column(latency.get(field)) for field, column in _LATENCY_COLUMNS.items()})
    extra = {k: json_safe(v) for k, v in snapshot.items() if k not in _INTERVAL_COLUMNS and k != "latency_ms"}
    extra_latency = {k: json_safe(v) for k, v in latency.items() if k not in _LATENCY_COLUMNS}
    if extra_latency:
        extra["latency_ms"] = extra_latency
    row["extra"] = extra or None
    return row


def rebuild_interval(row: JsonObject) -> JsonRow:
    """One snapshot as the engine reported it, from its stored row."""
    snapshot: JsonRow = {field: _column(row[column]) for field, column in _INTERVAL_COLUMNS.items()}
    snapshot["warmup"] = bool(snapshot["warmup"])
    latency: JsonRow = {field: _column(row[column]) for field, column in _LATENCY_COLUMNS.items()}
    extra = {k: _column(v) for k, v in as_object(row.get("extra")).items()}
    latency.update({k: _column(v) for k, v in as_object(extra.pop("latency_ms", None)).items()})
    snapshot.update(extra)
    snapshot["latency_ms"] = latency
    return snapshot


def _with_histograms(obj: JsonObject, hdrs: Mapping[str, str]) -> JsonRow:
    """``obj`` with its ``KIND_hdr`` fields after the last ``*_ms`` summary, where the engine puts them."""
    keys = list(obj)
    at = max((i for i, k in enumerate(keys) if k.endswith("_ms")), default=len(keys) - 1)
    out: JsonRow = {}
    for i, key in enumerate(keys):
        out[key] = _column(obj[key])
        if i == at:
            out.update({kind + _HDR_SUFFIX: data for kind, data in hdrs.items()})
    for kind, data in hdrs.items():
        out.setdefault(kind + _HDR_SUFFIX, data)
    return out


def rebuild_result(
    summary: JsonObject, intervals: Sequence[JsonObject], histograms: Sequence[Histogram]
) -> JsonRow:
    """The engine's result object (``caplab load --json`` without ``target``) from stored parts."""
    by_class: dict[str, dict[str, str]] = {}
    for h in histograms:
        by_class.setdefault(h.class_name, {})[h.kind] = h.data
    result = _with_histograms(summary, by_class.get(ALL_CLASSES, {}))
    if "classes" in result:
        result["classes"] = [
            _with_histograms(c, by_class.get(str(c.get("name")), {})) for c in _objects(result["classes"])
        ]
    series: list[JsonValue] = [rebuild_interval(r) for r in sorted(intervals, key=_interval_index)]
    ordered: JsonRow = {}
    for key, value in result.items():
        if key in INTERVALS_BEFORE and "intervals" not in ordered:
            ordered["intervals"] = series
        ordered[key] = value
    ordered.setdefault("intervals", series)
    return ordered


def _interval_index(row: JsonObject) -> int:
    index = row["idx"]
    return int(index) if isinstance(index, int | float | str) else 0


INTERVALS_BEFORE = ("per_target", "generator")
"""The keys that follow ``intervals`` in the engine's result (engine/src/result.rs): the series goes
back where the engine put it, so a rebuilt result reads as the engine wrote it."""
