"""Read queries over one study, shared by ``Store``'s readers: plain dict rows, in a stable order
(cell index, then trial as stored, then time), with the cell and trial named by index as a
user sees them rather than by database id.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, TypeAlias, TypedDict, cast

from sqlalchemy import Connection, Select, select

from caplab.json_types import JsonObject, JsonRow, as_object, integer
from caplab.store.codec import Histogram, rebuild_result
from caplab.store.schema import cells, events, histograms, intervals, resource_samples, studies, trials


def iso(value: object) -> str | None:
    """Timestamps leave the store as ISO 8601 strings with their UTC offset (None when unset)."""
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else None


StoredRow: TypeAlias = dict[str, object]
"""One row of a table as the database gives it back (``schema`` names its columns): column →
value (an id, a text, a timestamp, or a JSON column's value)."""


_TRIAL_KEYS = [
    trials.c.id.label("trial_id"),
    cells.c.idx.label("cell_index"),
    trials.c.idx.label("trial_index"),
    trials.c.kind.label("trial_kind"),
]


class SampleRow(TypedDict):
    """One resource sample of a trial, with the trial it belongs to."""

    trial_id: int
    cell_index: int
    trial_index: int
    trial_kind: str
    t: float
    scope: str
    metric: str
    value: float


class TrialKeys(TypedDict):
    """Which trial a row belongs to: its id, and its cell and trial as a user names them."""

    trial_id: int
    cell_index: int
    trial_index: int
    trial_kind: str


class TrialRow(TrialKeys):
    """One trial: its keys, its typed columns and its ``summary`` (the engine's result object
    without its interval series and histograms)."""

    status: str
    model: str
    offered_rate: float | None
    users: int | None
    duration_s: float
    sent: int
    completed: int
    errors: int
    dropped: int
    throughput: float
    summary: JsonObject
    started_at: datetime


class IntervalRow(TrialKeys):
    """One interval snapshot of a trial (``codec`` names its columns), with the trial's keys."""

    idx: int
    start_s: float
    end_s: float
    warmup: bool
    sent: int
    completed: int
    errors: int
    dropped: int
    in_flight: int
    throughput: float
    latency_count: int
    min_ms: float | None
    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None
    extra: JsonObject | None


class EventRow(TypedDict):
    """Something that happened during the study, with the cell and trial it concerns (if any)."""

    at: str | None
    kind: str
    message: str
    cell_index: int | None
    trial_index: int | None


def _study_trials(study_id: int) -> Select[Any]:
    return (
        select(*_TRIAL_KEYS)
        .select_from(trials.join(cells, trials.c.cell_id == cells.c.id))
        .where(cells.c.study_id == study_id)
    )


def study_row(conn: Connection, study_id: int) -> StoredRow | None:
    row = conn.execute(select(studies).where(studies.c.id == study_id)).mappings().first()
    return dict(row) if row is not None else None


def cell_rows(conn: Connection, study_id: int) -> list[StoredRow]:
    query = select(cells).where(cells.c.study_id == study_id).order_by(cells.c.idx)
    return [dict(r) for r in conn.execute(query).mappings()]


def trial_rows(conn: Connection, study_id: int) -> list[TrialRow]:
    query = (
        _study_trials(study_id)
        .add_columns(*[c for c in trials.c if c.name not in ("id", "cell_id", "idx", "kind")])
        .order_by(cells.c.idx, trials.c.id)
    )
    return [cast(TrialRow, dict(r)) for r in conn.execute(query).mappings()]


def interval_rows(conn: Connection, study_id: int) -> list[IntervalRow]:
    query = (
        _study_trials(study_id)
        .add_columns(*[c for c in intervals.c if c.name != "trial_id"])
        .join(intervals, intervals.c.trial_id == trials.c.id)
        .order_by(cells.c.idx, trials.c.id, intervals.c.idx)
    )
    return [cast(IntervalRow, dict(r)) for r in conn.execute(query).mappings()]


def sample_rows(conn: Connection, study_id: int) -> list[SampleRow]:
    query = (
        _study_trials(study_id)
        .add_columns(resource_samples.c.t, resource_samples.c.scope, resource_samples.c.metric)
        .add_columns(resource_samples.c.value)
        .join(resource_samples, resource_samples.c.trial_id == trials.c.id)
        .order_by(cells.c.idx, trials.c.id, resource_samples.c.t, resource_samples.c.id)
    )
    return [cast(SampleRow, dict(r)) for r in conn.execute(query).mappings()]


def event_rows(conn: Connection, study_id: int) -> list[EventRow]:
    query = (
        select(events.c.at, events.c.kind, events.c.message)
        .add_columns(cells.c.idx.label("cell_index"), trials.c.idx.label("trial_index"))
        .select_from(
            events.outerjoin(cells, events.c.cell_id == cells.c.id).outerjoin(
                trials, events.c.trial_id == trials.c.id
            )
        )
        .where(events.c.study_id == study_id)
        .order_by(events.c.id)
    )
    return [cast(EventRow, {**r, "at": iso(r["at"])}) for r in conn.execute(query).mappings()]


def histogram_rows(conn: Connection, study_id: int) -> dict[int, list[Histogram]]:
    """Each trial's histograms, by trial id."""
    query = (
        select(histograms.c.trial_id, histograms.c.class_name, histograms.c.kind, histograms.c.data)
        .join(trials, histograms.c.trial_id == trials.c.id)
        .join(cells, trials.c.cell_id == cells.c.id)
        .where(cells.c.study_id == study_id)
    )
    found: dict[int, list[Histogram]] = defaultdict(list)
    for trial_id, class_name, kind, data in conn.execute(query):
        found[trial_id].append(Histogram(class_name, kind, data))
    return found


def _key(row: StoredRow, column: str) -> int:
    """An id or index column (never null in the store's schema)."""
    found = integer(row, column)
    assert found is not None, f"{column} is a non-null integer column"
    return found


def trial_documents(conn: Connection, study_id: int) -> dict[int, list[JsonRow]]:
    """Each cell's trials (by cell index) as the engine's result objects, with a ``trial`` key
    saying which trial of the cell it was."""
    series: dict[int, list[IntervalRow]] = defaultdict(list)
    for row in interval_rows(conn, study_id):
        series[row["trial_id"]].append(row)
    hdrs = histogram_rows(conn, study_id)
    by_cell: dict[int, list[JsonRow]] = defaultdict(list)
    for t in trial_rows(conn, study_id):
        trial_id = t["trial_id"]
        meta: JsonRow = {
            "index": t["trial_index"],
            "kind": t["trial_kind"],
            "status": t["status"],
            "started_at": iso(t["started_at"]),
        }
        result = rebuild_result(t["summary"], series[trial_id], hdrs[trial_id])
        by_cell[t["cell_index"]].append({"trial": meta, **result})
    return by_cell


def trial_result(conn: Connection, trial_id: int) -> JsonRow | None:
    """One trial's engine result object, rebuilt; None if there is no such trial."""
    summary = conn.execute(select(trials.c.summary).where(trials.c.id == trial_id)).scalar()
    if summary is None:
        return None
    rows = [
        dict(r) for r in conn.execute(select(intervals).where(intervals.c.trial_id == trial_id)).mappings()
    ]
    hdrs = [
        Histogram(r.class_name, r.kind, r.data)
        for r in conn.execute(select(histograms).where(histograms.c.trial_id == trial_id))
    ]
    return rebuild_result(as_object(summary), rows, hdrs)


class StoredDocument(TypedDict):
    """The study document as the store's queries build it, before ``StudyDocument`` types it."""

    study: dict[str, object]
    cells: list[dict[str, object]]
    events: list[EventRow]


def study_document(conn: Connection, study_id: int) -> StoredDocument:
    """The study, its cells with their trials' result objects, and its events (see
    ``Store.study_document``). The study must exist."""
    s = study_row(conn, study_id)
    assert s is not None
    trials_by_cell = trial_documents(conn, study_id)
    study: dict[str, object] = {
        "id": s["id"],
        "name": s["name"],
        "status": s["status"],
        "created_at": iso(s["created_at"]),
        "finished_at": iso(s["finished_at"]),
        "spec": s["spec_text"],
        "spec_path": s["spec_path"],
        "caplab_version": s["caplab_version"],
        "environment": s["environment"],
    }
    if s["validated"] is not None:
        study["validated"] = s["validated"]
    cells_doc: list[dict[str, object]] = [
        {
            "index": c["idx"],
            "factors": c["factors"],
            "status": c["status"],
            "error": c["error"],
            "metrics": c["metrics"],
            "resources": c["resources"],
            "started_at": iso(c["started_at"]),
            "finished_at": iso(c["finished_at"]),
            "trials": trials_by_cell.get(_key(c, "idx"), []),
        }
        for c in cell_rows(conn, study_id)
    ]
    return {"study": study, "cells": cells_doc, "events": event_rows(conn, study_id)}
