"""The repository: the only code that reads or writes the results store.

CONTRACT (implemented by the store's owner; the runner and the CLI depend on exactly this):

- ``Store(url)`` opens the database and upgrades its schema to the newest Alembic revision.
- Writes are transactional: ``save_trial`` writes the trial row, its intervals, its histograms
  and its resource samples in one transaction; a crash leaves either all of them or none.
- Statuses: study ``running | complete | interrupted | failed``; cell ``pending | running |
  complete | failed`` (and ``interrupted``, which the runner records on Ctrl-C); trial
  ``complete | interrupted | failed``.

Free text on its way in (spec, environment, errors, event messages) has the password of any
``scheme://user:password@`` URL replaced by ``***``: a store is shared and reported from.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, CursorResult, case, delete, func, insert, select, update
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from caplab import __version__
from caplab.collect.base import ResourceSample
from caplab.engine import RunResult
from caplab.json_types import JsonObject, JsonRow
from caplab.store import reading
from caplab.store.codec import HDR_ENCODING, split_result
from caplab.store.connect import WRITE_OPTION, open_engine
from caplab.store.document import StudyDocument
from caplab.store.errors import NotFound, StoreError, StudyNotFound
from caplab.store.migrate import upgrade
from caplab.store.reading import EventRow, SampleRow
from caplab.store.schema import cells, events, histograms, intervals, resource_samples, studies, trials
from caplab.store.urls import describe, redact_url, scrub, scrub_json

__all__ = ["CellRow", "Store", "StudyRow", "default_url", "redact_url"]

STUDY_STATUSES = frozenset({"running", "complete", "interrupted", "failed"})
CELL_STATUSES = frozenset({"pending", "running", "complete", "failed", "interrupted"})
TRIAL_STATUSES = frozenset({"complete", "interrupted", "failed"})
_CELL_DONE = frozenset({"complete", "failed", "interrupted"})


def default_url() -> str:
    """``$CAPLAB_DB`` if set, else SQLite in ``./caplab.db``."""
    return os.environ.get("CAPLAB_DB", "sqlite:///caplab.db")


@dataclass(frozen=True)
class StudyRow:
    id: int
    name: str
    status: str
    created_at: str
    finished_at: str | None
    cells_total: int
    cells_complete: int


@dataclass(frozen=True)
class CellRow:
    id: int
    study_id: int
    index: int
    factors: JsonObject
    status: str
    error: str | None
    metrics: JsonObject | None
    resources: JsonObject | None


def _now() -> datetime:
    return datetime.now(UTC)


def _check(status: str, allowed: frozenset[str], what: str) -> None:
    if status not in allowed:
        raise ValueError(f"{what} status must be one of {sorted(allowed)}, not {status!r}")


def _no_figure(value: float) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _new_id(result: CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    assert key is not None, "an INSERT of one row"
    return int(key[0])


def _cell_row(r: Mapping[str, Any]) -> CellRow:
    return CellRow(
        id=r["id"],
        study_id=r["study_id"],
        index=r["idx"],
        factors=r["factors"],
        status=r["status"],
        error=r["error"],
        metrics=r["metrics"],
        resources=r["resources"],
    )


class Store:
    def __init__(self, url: str | None = None) -> None:
        raw = url or default_url()
        self._url = redact_url(raw)
        try:
            self._engine = open_engine(raw)
        except (ArgumentError, ValueError):
            # The parser's message quotes the URL, password and all: do not chain it.
            raise StoreError(f"not a database URL: {self._url}") from None
        except ImportError as e:
            raise StoreError(f"no driver for {self._url}: {e}") from e
        self._writer = self._engine.execution_options(**{WRITE_OPTION: True})
        try:
            upgrade(self._engine, self._url)
        except SQLAlchemyError as e:
            self._engine.dispose()
            raise StoreError(f"cannot open the results store {self._url}: {describe(e)}") from e
        except StoreError:
            self._engine.dispose()
            raise

    @property
    def url(self) -> str:
        """The redacted URL (never the password)."""
        return self._url

    def __repr__(self) -> str:
        return f"Store({self._url!r})"

    def close(self) -> None:
        """Releases the connections (a notebook may open many stores)."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One logical write: committed whole when the block ends, rolled back if it raises."""
        with self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read that sees one snapshot of the store, even while a run is writing to it."""
        with self._engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    # -- writing a study ---------------------------------------------------------------------
    def create_study(
        self,
        name: str,
        spec_text: str,
        spec_path: str,
        environment: JsonObject,
        validated: JsonObject | None = None,
    ) -> int:
        """A new running study. ``validated`` is the study as the spec validated it, every default
        filled in, so that a report states what was run rather than repeating the spec's defaults."""
        row = {
            "name": name,
            "status": "running",
            "spec_text": scrub(spec_text),
            "spec_path": scrub(spec_path),
            "environment": scrub_json(environment),
            "validated": scrub_json(validated) if validated is not None else None,
            "caplab_version": __version__,
            "created_at": _now(),
        }
        with self._write() as conn:
            return _new_id(conn.execute(insert(studies).values(row)))

    def find_resumable(self, name: str, spec_text: str) -> int | None:
        """The newest study with this name and identical spec that is not complete, if any."""
        query = (
            select(studies.c.id)
            .where(studies.c.name == name, studies.c.spec_text == scrub(spec_text))
            .where(studies.c.status != "complete")
            .order_by(studies.c.id.desc())
            .limit(1)
        )
        with self._read() as conn:
            found = conn.execute(query).scalar()
        return int(found) if found is not None else None

    def reopen_study(self, study_id: int) -> None:
        """Marks a resumed study as running again (until ``finish_study``)."""
        with self._write() as conn:
            self._update_one(conn, studies, study_id, status="running", finished_at=None)

    def add_cells(self, study_id: int, factors: Sequence[JsonObject]) -> list[CellRow]:
        """Creates the cells (index = position) unless they exist; returns all cells in order."""
        with self._write() as conn:
            self._require_study(conn, study_id)
            existing = set(conn.execute(select(cells.c.idx).where(cells.c.study_id == study_id)).scalars())
            fresh = [
                {"study_id": study_id, "idx": i, "factors": scrub_json(f), "status": "pending"}
                for i, f in enumerate(factors)
                if i not in existing
            ]
            if fresh:
                conn.execute(insert(cells), fresh)
            return [_cell_row(r) for r in reading.cell_rows(conn, study_id)]

    def set_cell_status(
        self,
        cell_id: int,
        status: str,
        error: str | None = None,
        metrics: JsonObject | None = None,
        resources: JsonObject | None = None,
    ) -> None:
        """Sets the status with its error, metrics and resources (None clears them): ``running``
        stamps the start, a final status the finish."""
        _check(status, CELL_STATUSES, "cell")
        values: dict[str, object] = {
            "status": status,
            "error": scrub(error) if error is not None else None,
            "metrics": scrub_json(metrics) if metrics is not None else None,
            "resources": scrub_json(resources) if resources is not None else None,
        }
        if status == "running":
            values.update(started_at=_now(), finished_at=None)
        elif status in _CELL_DONE:
            values["finished_at"] = _now()
        with self._write() as conn:
            self._update_one(conn, cells, cell_id, **values)

    def reset_cell(self, cell_id: int) -> None:
        """Forgets a cell's earlier attempt (its trials and results) before it is run again."""
        with self._write() as conn:
            conn.execute(delete(trials).where(trials.c.cell_id == cell_id))
            self._update_one(
                conn,
                cells,
                cell_id,
                status="pending",
                error=None,
                metrics=None,
                resources=None,
                started_at=None,
                finished_at=None,
            )

    def save_trial(
        self,
        cell_id: int,
        index: int,
        result: RunResult,
        samples: list[ResourceSample],
        kind: str = "fixed",
        status: str = "complete",
    ) -> int:
        """Stores one trial whole (row, intervals, histograms, samples) in one transaction.

        A trial saved again under the same (cell, kind, index) — a resumed cell re-running it —
        replaces the earlier one. Samples whose value is NaN or infinite carry no figure and are
        left out. ``started_at`` is the save time less the trial's measured span.
        """
        _check(status, TRIAL_STATUSES, "trial")
        parts = split_result(result.raw)
        elapsed = max([i.end_s for i in result.intervals], default=result.warmup_s + result.duration_s)
        trial = {
            "cell_id": cell_id,
            "idx": index,
            "kind": kind,
            "status": status,
            "model": result.model,
            "offered_rate": result.offered_rate,
            "users": result.users,
            "duration_s": result.duration_s,
            "sent": result.sent,
            "completed": result.completed,
            "errors": result.errors,
            "dropped": result.dropped,
            "throughput": result.throughput,
            "summary": parts.summary,
            "started_at": _now() - timedelta(seconds=elapsed),
        }
        with self._write() as conn:
            conn.execute(
                delete(trials).where(
                    trials.c.cell_id == cell_id, trials.c.kind == kind, trials.c.idx == index
                )
            )
            trial_id = _new_id(conn.execute(insert(trials).values(trial)))
            if parts.intervals:
                conn.execute(insert(intervals), [{"trial_id": trial_id, **row} for row in parts.intervals])
            if parts.histograms:
                rows = [
                    {
                        "trial_id": trial_id,
                        "class_name": h.class_name,
                        "kind": h.kind,
                        "encoding": HDR_ENCODING,
                        "data": h.data,
                    }
                    for h in parts.histograms
                ]
                conn.execute(insert(histograms), rows)
            self._insert_samples(conn, trial_id, samples)
        return trial_id

    def _insert_samples(self, conn: Connection, trial_id: int, samples: list[ResourceSample]) -> None:
        """The trial's resource samples; a NaN or infinite value is no figure and is left out."""
        rows = [
            {"trial_id": trial_id, "t": s.t, "scope": s.scope, "metric": s.metric, "value": s.value}
            for s in samples
            if not _no_figure(s.value)
        ]
        if rows:
            conn.execute(insert(resource_samples), rows)

    def add_event(
        self, study_id: int, kind: str, message: str, cell_id: int | None = None, trial_id: int | None = None
    ) -> None:
        row = {
            "study_id": study_id,
            "cell_id": cell_id,
            "trial_id": trial_id,
            "at": _now(),
            "kind": kind,
            "message": scrub(message),
        }
        with self._write() as conn:
            conn.execute(insert(events).values(row))

    def finish_study(self, study_id: int, status: str) -> None:
        _check(status, STUDY_STATUSES, "study")
        with self._write() as conn:
            self._update_one(conn, studies, study_id, status=status, finished_at=_now())

    def _update_one(self, conn: Connection, table: Any, row_id: int, **values: Any) -> None:
        if conn.execute(update(table).where(table.c.id == row_id).values(**values)).rowcount != 1:
            if table is studies:
                raise StudyNotFound(f"no study {row_id} in {self._url}")
            raise NotFound(f"no {table.name.removesuffix('s')} with id {row_id} in {self._url}")

    def _require_study(self, conn: Connection, study_id: int) -> None:
        if reading.study_row(conn, study_id) is None:
            raise StudyNotFound(f"no study {study_id} in {self._url}")

    # -- reading -----------------------------------------------------------------------------
    def list_studies(self) -> list[StudyRow]:
        complete = func.coalesce(func.sum(case((cells.c.status == "complete", 1), else_=0)), 0)
        query = (
            select(studies, func.count(cells.c.id).label("cells_total"), complete.label("cells_complete"))
            .select_from(studies.outerjoin(cells, cells.c.study_id == studies.c.id))
            .group_by(studies.c.id)
            .order_by(studies.c.id)
        )
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        return [
            StudyRow(
                id=r["id"],
                name=r["name"],
                status=r["status"],
                created_at=reading.iso(r["created_at"]) or "",
                finished_at=reading.iso(r["finished_at"]),
                cells_total=int(r["cells_total"]),
                cells_complete=int(r["cells_complete"]),
            )
            for r in rows
        ]

    def study(self, study_id: int) -> StudyRow:
        """One study's row, as ``list_studies`` shows it."""
        for row in self.list_studies():
            if row.id == study_id:
                return row
        raise StudyNotFound(f"no study {study_id} in {self._url}")

    def resolve_study(self, ref: str) -> int:
        """``latest``, a numeric id, or a study name (its newest study) → id; raises KeyError
        (``StudyNotFound``) with a clear message if absent."""
        ref = ref.strip()
        if ref == "latest":
            query = select(func.max(studies.c.id))
        elif ref.isdigit():
            query = select(studies.c.id).where(studies.c.id == int(ref))
        else:
            query = select(func.max(studies.c.id)).where(studies.c.name == ref)
        with self._read() as conn:
            found = conn.execute(query).scalar()
        if found is not None:
            return int(found)
        if ref == "latest":
            raise StudyNotFound(f"no studies yet in {self._url}")
        shown = ref if ref.isdigit() else repr(ref)
        raise StudyNotFound(f"no study {shown} in {self._url} (see `caplab ls`)")

    def cells(self, study_id: int) -> list[CellRow]:
        with self._read() as conn:
            self._require_study(conn, study_id)
            return [_cell_row(r) for r in reading.cell_rows(conn, study_id)]

    def study_document(self, study_id: int) -> StudyDocument:
        """Everything about a study as one typed document (``caplab.store.document``): the study,
        its cells (factors, status, error, metrics, resources) each with its trials (the
        ``caplab load --json`` object of each, rebuilt from the stored rows, intervals and
        histograms included) and its events. ``.to_json()`` is what ``caplab run --json`` prints.
        """
        with self._read() as conn:
            self._require_study(conn, study_id)
            doc = reading.study_document(conn, study_id)
        doc["study"]["store"] = self._url
        return StudyDocument.from_json(doc)

    def resource_samples(self, study_id: int) -> list[SampleRow]:
        """Rows of (cell_index, trial_index, t, scope, metric, value), plus trial_kind and trial_id."""
        with self._read() as conn:
            self._require_study(conn, study_id)
            return reading.sample_rows(conn, study_id)

    def trial_rows(self, study_id: int) -> list[reading.TrialRow]:
        """One dict per trial: cell_index, trial_index, trial_kind, trial_id, the trial's columns
        and its ``summary`` (the engine's result without intervals and histograms)."""
        with self._read() as conn:
            self._require_study(conn, study_id)
            return reading.trial_rows(conn, study_id)

    def interval_rows(self, study_id: int) -> list[reading.IntervalRow]:
        """One dict per interval snapshot of every trial, with the trial's keys as above."""
        with self._read() as conn:
            self._require_study(conn, study_id)
            return reading.interval_rows(conn, study_id)

    def events(self, study_id: int) -> list[EventRow]:
        """The study's events in order: at, kind, message, cell_index, trial_index."""
        with self._read() as conn:
            self._require_study(conn, study_id)
            return reading.event_rows(conn, study_id)

    def trial_result(self, trial_id: int) -> JsonRow:
        """One trial's engine result object, exactly as ``RunResult.raw`` held it."""
        with self._read() as conn:
            found = reading.trial_result(conn, trial_id)
        if found is None:
            raise NotFound(f"no trial with id {trial_id} in {self._url}")
        return found
