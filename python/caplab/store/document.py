"""What the store holds about a study, as one typed, versioned document (``Store.study_document``).

Following pyperf's results: a document is an immutable object that owns its JSON. ``to_json``
writes it with ``FORMAT_VERSION``; ``StudyDocument.from_json`` reads any version it knows, through
one loader per version, and refuses a newer one by name. A document written before the version
was recorded (no ``format_version`` key) is version 1.

The study, its cells, trials and events have fixed keys, read into fields here; what an
experiment measured (a cell's ``metrics``, a trial's engine result) is owned by the experiment and
the engine, so it is kept as the JSON it was stored as and read through typed properties. Keys
this caplab does not know are kept (``extra``), so ``from_json(d).to_json() == d``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from caplab.json_types import (
    EMPTY,
    JsonObject,
    as_object,
    flag,
    integer,
    member,
    members,
    number,
    optional_member,
    strings,
    text,
)

FORMAT_VERSION = 1
"""The study document's format: raised when a key changes meaning or goes away (a new key that
older readers may ignore needs no new version)."""


class DocumentFormatError(ValueError):
    """A stored document this caplab cannot read: a newer format, or a key of the wrong type."""


def _required(obj: JsonObject, key: str, kind: type, where: str) -> object:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise DocumentFormatError(f"{where}.{key}: expected {kind.__name__}, found {value!r}")
    return value


def _int(obj: JsonObject, key: str, where: str) -> int:
    value = _required(obj, key, int, where)
    assert isinstance(value, int)
    return value


def _str(obj: JsonObject, key: str, where: str) -> str:
    value = _required(obj, key, str, where)
    assert isinstance(value, str)
    return value


def _extra(obj: JsonObject, known: tuple[str, ...]) -> JsonObject:
    return {k: v for k, v in obj.items() if k not in known}


def _object(value: object, where: str) -> JsonObject:
    if not isinstance(value, Mapping):
        raise DocumentFormatError(f"{where}: expected an object, found {type(value).__name__}")
    return as_object(value)


@dataclass(frozen=True)
class StudyRecord:
    """The study's row: what was run, when, from which file, on which host."""

    id: int
    name: str
    status: str
    created_at: str | None
    finished_at: str | None
    spec: str | None
    """The study file as written (passwords masked)."""
    spec_path: str | None
    caplab_version: str | None
    environment: JsonObject
    """The host as probed at the study's start (free-form: whatever the probe found)."""
    validated: JsonObject | None = None
    """The study as validated, every default filled in (``StudySpec.model_dump``); None for a
    study stored before caplab kept it."""
    store: str | None = None
    """The store's URL (password masked), added by the store that read the document."""
    extra: JsonObject = field(default_factory=dict)

    _KEYS = (
        "id",
        "name",
        "status",
        "created_at",
        "finished_at",
        "spec",
        "spec_path",
        "caplab_version",
        "environment",
        "validated",
        "store",
    )

    @classmethod
    def from_json(cls, obj: JsonObject) -> StudyRecord:
        return cls(
            id=_int(obj, "id", "study"),
            name=_str(obj, "name", "study"),
            status=_str(obj, "status", "study"),
            created_at=text(obj, "created_at"),
            finished_at=text(obj, "finished_at"),
            spec=text(obj, "spec"),
            spec_path=text(obj, "spec_path"),
            caplab_version=text(obj, "caplab_version"),
            environment=member(obj, "environment"),
            validated=optional_member(obj, "validated"),
            store=text(obj, "store"),
            extra=_extra(obj, cls._KEYS),
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "spec": self.spec,
            "spec_path": self.spec_path,
            "caplab_version": self.caplab_version,
            "environment": dict(self.environment),
        }
        if self.validated is not None:
            out["validated"] = dict(self.validated)
        if self.store is not None:
            out["store"] = self.store
        return {**out, **self.extra}


@dataclass(frozen=True)
class TrialRecord:
    """One trial of a cell: which it was (``trial``) and the engine's result object, rebuilt from
    the stored rows (``caplab load --json`` without ``target``)."""

    index: int
    kind: str
    status: str | None
    started_at: str | None
    result: JsonObject

    @classmethod
    def from_json(cls, obj: JsonObject, where: str) -> TrialRecord:
        meta = _object(obj.get("trial"), f"{where}.trial")
        return cls(
            index=_int(meta, "index", f"{where}.trial"),
            kind=_str(meta, "kind", f"{where}.trial"),
            status=text(meta, "status"),
            started_at=text(meta, "started_at"),
            result={k: v for k, v in obj.items() if k != "trial"},
        )

    def to_json(self) -> dict[str, object]:
        meta = {"index": self.index, "kind": self.kind, "status": self.status, "started_at": self.started_at}
        return {"trial": meta, **self.result}

    @property
    def offered_rate(self) -> float | None:
        return number(self.result, "offered_rate")

    @property
    def users(self) -> int | None:
        return integer(self.result, "users")

    @property
    def throughput(self) -> float | None:
        return number(self.result, "throughput")

    @property
    def errors(self) -> int | None:
        return integer(self.result, "errors")

    @property
    def dropped(self) -> int | None:
        return integer(self.result, "dropped")

    @property
    def warmup_s(self) -> float:
        return number(self.result, "warmup_s") or 0.0

    @property
    def duration_s(self) -> float:
        return number(self.result, "duration_s") or 0.0

    @property
    def latency_ms(self) -> JsonObject:
        """The latency summary (``p50``, ``p99``… in ms) over the measured window."""
        return member(self.result, "latency_ms")

    @property
    def generator(self) -> JsonObject:
        """The generator's own figures (``cpu_us_per_request``, ``saturated``)."""
        return member(self.result, "generator")

    @property
    def intervals(self) -> list[JsonObject]:
        """The interval snapshots, in order."""
        return members(self.result, "intervals")


@dataclass(frozen=True)
class CellMetrics:
    """What a cell's experiment measured, as the runner stored it: the figures over its measured
    trials and, by kind, its search, limit, recovery and failover. The experiment owns this JSON
    (``stored``: None for a cell that ended before it measured anything); the properties read its
    keys with their types."""

    stored: JsonObject | None

    @property
    def json(self) -> JsonObject:
        """The stored figures (empty when the cell stored none)."""
        return self.stored if self.stored is not None else EMPTY

    def figure(self, key: str) -> float | None:
        """A number of the cell (``throughput``, ``error_ratio``, ``sent``…), as stored."""
        return number(self.json, key)

    def part(self, key: str) -> JsonObject | None:
        """A nested outcome (``capacity``, ``limit``, ``hardware``, ``job``…); None when absent."""
        return optional_member(self.json, key)

    def parts(self, key: str) -> list[JsonObject]:
        """A list of outcomes (``recovery``, ``failover``, ``ledger``, ``search_trials``)."""
        return members(self.json, key)

    @property
    def trials(self) -> int | None:
        return integer(self.json, "trials")

    @property
    def users(self) -> int | None:
        return integer(self.json, "users")

    @property
    def steady(self) -> bool | None:
        return flag(self.json, "steady")

    @property
    def steady_notes(self) -> list[str]:
        return strings(self.json, "steady_notes")

    @property
    def generator_saturated(self) -> bool:
        return bool(self.json.get("generator_saturated"))

    @property
    def searched(self) -> bool:
        """Whether a capacity search ran in this cell (it stored a ``capacity``)."""
        return self.part("capacity") is not None

    @property
    def app(self) -> JsonObject:
        """The system's own counters (free-form, by name)."""
        return member(self.json, "app")


@dataclass(frozen=True)
class CellRecord:
    """One cell of the factor matrix: its factors, how it ended, what it measured, the resources
    each role used and its trials."""

    index: int
    factors: JsonObject
    status: str
    error: str | None
    metrics: CellMetrics
    resources: JsonObject | None
    """Each scope's (``host``, a role, ``volume:NAME``, ``app``) mean use, by metric; None for a
    cell that ended before it measured anything."""
    started_at: str | None
    finished_at: str | None
    trials: tuple[TrialRecord, ...]
    extra: JsonObject = field(default_factory=dict)

    _KEYS = (
        "index",
        "factors",
        "status",
        "error",
        "metrics",
        "resources",
        "started_at",
        "finished_at",
        "trials",
    )

    @classmethod
    def from_json(cls, obj: JsonObject, where: str) -> CellRecord:
        return cls(
            index=_int(obj, "index", where),
            factors=member(obj, "factors"),
            status=_str(obj, "status", where),
            error=text(obj, "error"),
            metrics=CellMetrics(optional_member(obj, "metrics")),
            resources=optional_member(obj, "resources"),
            started_at=text(obj, "started_at"),
            finished_at=text(obj, "finished_at"),
            trials=tuple(
                TrialRecord.from_json(_object(t, f"{where}.trials[{i}]"), f"{where}.trials[{i}]")
                for i, t in enumerate(_list(obj, "trials", where))
            ),
            extra=_extra(obj, cls._KEYS),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "factors": dict(self.factors),
            "status": self.status,
            "error": self.error,
            "metrics": dict(self.metrics.stored) if self.metrics.stored is not None else None,
            "resources": dict(self.resources) if self.resources is not None else None,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "trials": [t.to_json() for t in self.trials],
            **self.extra,
        }

    @property
    def scopes(self) -> JsonObject:
        """Each measured scope's figures (empty when the cell measured none)."""
        return self.resources if self.resources is not None else EMPTY

    def resource(self, scope: str) -> JsonObject:
        """One scope's figures by metric; empty when it was not measured."""
        return member(self.scopes, scope)


@dataclass(frozen=True)
class EventRecord:
    """Something that happened during the study (a cell started, a retry, a failure)."""

    at: str | None
    kind: str | None
    message: str | None
    cell_index: int | None
    trial_index: int | None

    @classmethod
    def from_json(cls, obj: JsonObject) -> EventRecord:
        return cls(
            at=text(obj, "at"),
            kind=text(obj, "kind"),
            message=text(obj, "message"),
            cell_index=integer(obj, "cell_index"),
            trial_index=integer(obj, "trial_index"),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at,
            "kind": self.kind,
            "message": self.message,
            "cell_index": self.cell_index,
            "trial_index": self.trial_index,
        }


def _list(obj: JsonObject, key: str, where: str) -> list[object]:
    value = obj.get(key, [])
    if not isinstance(value, list | tuple):
        raise DocumentFormatError(f"{where}.{key}: expected a list, found {type(value).__name__}")
    return list(value)


@dataclass(frozen=True)
class StudyDocument:
    """A study with its cells (each with its trials) and its events."""

    study: StudyRecord
    cells: tuple[CellRecord, ...]
    events: tuple[EventRecord, ...] = ()

    @classmethod
    def from_json(cls, obj: object, version: int | None = None) -> StudyDocument:
        """Reads a document of any known format: ``version``, else the document's own
        ``format_version``, else 1 (documents written before the version was recorded)."""
        doc = _object(obj, "study document")
        found = version if version is not None else doc.get("format_version", 1)
        loader = _LOADERS.get(found) if isinstance(found, int) and not isinstance(found, bool) else None
        if loader is None:
            known = ", ".join(str(v) for v in sorted(_LOADERS))
            raise DocumentFormatError(
                f"study document format_version {found!r} is not one this caplab reads ({known}): "
                "a newer caplab wrote it; upgrade caplab to read it"
            )
        return loader(doc)

    def to_json(self) -> dict[str, object]:
        """The document as JSON, with its ``format_version``."""
        return {
            "format_version": FORMAT_VERSION,
            "study": self.study.to_json(),
            "cells": [c.to_json() for c in self.cells],
            "events": [e.to_json() for e in self.events],
        }

    def cell(self, index: int) -> CellRecord | None:
        return next((c for c in self.cells if c.index == index), None)


def _load_v1(doc: JsonObject) -> StudyDocument:
    return StudyDocument(
        study=StudyRecord.from_json(_object(doc.get("study"), "study")),
        cells=tuple(
            CellRecord.from_json(_object(c, f"cells[{i}]"), f"cells[{i}]")
            for i, c in enumerate(_list(doc, "cells", "document"))
        ),
        events=tuple(
            EventRecord.from_json(_object(e, f"events[{i}]"))
            for i, e in enumerate(_list(doc, "events", "document"))
        ),
    )


_LOADERS: dict[int, Callable[[JsonObject], StudyDocument]] = {1: _load_v1}
"""One loader per format version this caplab reads."""

__all__ = [
    "EMPTY",
    "FORMAT_VERSION",
    "CellMetrics",
    "CellRecord",
    "DocumentFormatError",
    "EventRecord",
    "JsonObject",
    "StudyDocument",
    "StudyRecord",
    "TrialRecord",
]
