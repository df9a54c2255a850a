"""The repository: the only code that reads or writes the results store.

CONTRACT (implemented by the store's owner; the runner and the CLI depend on exactly this):

- ``Store(url)`` opens the database and upgrades its schema to the newest Alembic revision.
- Writes are transactional: ``save_trial`` writes the trial row, its intervals, its histograms
  and its resource samples in one transaction; a crash leaves either all of them or none.
- Statuses: study ``running | complete | interrupted | failed``; cell ``pending | running |
  complete | failed``; trial ``complete | interrupted | failed``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from caplab.collect.base import ResourceSample
from caplab.engine import RunResult


def default_url() -> str:
    """``$CAPLAB_DB`` if set, else SQLite in ``./caplab.db``."""
    return os.environ.get("CAPLAB_DB", "sqlite:///caplab.db")


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``: safe to print or write into a report."""
    raise NotImplementedError


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
    factors: dict[str, Any]
    status: str
    error: str | None
    metrics: dict[str, Any] | None
    resources: dict[str, Any] | None


class Store:
    def __init__(self, url: str | None = None) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The redacted URL (never the password)."""
        raise NotImplementedError

    # -- writing a study ---------------------------------------------------------------------
    def create_study(self, name: str, spec_text: str, spec_path: str, environment: dict[str, Any]) -> int:
        raise NotImplementedError

    def find_resumable(self, name: str, spec_text: str) -> int | None:
        """The newest study with this name and identical spec that is not complete, if any."""
        raise NotImplementedError

    def add_cells(self, study_id: int, factors: list[dict[str, Any]]) -> list[CellRow]:
        """Creates the cells (index = position) unless they exist; returns all cells in order."""
        raise NotImplementedError

    def set_cell_status(
        self,
        cell_id: int,
        status: str,
        error: str | None = None,
        metrics: dict[str, Any] | None = None,
        resources: dict[str, Any] | None = None,
    ) -> None:
        raise NotImplementedError

    def save_trial(
        self,
        cell_id: int,
        index: int,
        result: RunResult,
        samples: list[ResourceSample],
        kind: str = "fixed",
        status: str = "complete",
    ) -> int:
        """Stores one trial whole (row, intervals, histograms, samples) in one transaction."""
        raise NotImplementedError

    def add_event(
        self, study_id: int, kind: str, message: str, cell_id: int | None = None, trial_id: int | None = None
    ) -> None:
        raise NotImplementedError

    def finish_study(self, study_id: int, status: str) -> None:
        raise NotImplementedError

    # -- reading -----------------------------------------------------------------------------
    def list_studies(self) -> list[StudyRow]:
        raise NotImplementedError

    def resolve_study(self, ref: str) -> int:
        """``latest`` or a numeric id → id; raises KeyError with a clear message if absent."""
        raise NotImplementedError

    def cells(self, study_id: int) -> list[CellRow]:
        raise NotImplementedError

    def study_document(self, study_id: int) -> dict[str, Any]:
        """Everything about a study as one JSON-able dict, shaped like ``caplab run --json``:
        ``{"study": {id, name, status, created_at, finished_at, spec}, "cells": [{index, factors,
        status, error, metrics, resources, trials: [<the caplab load --json object of each trial,
        rebuilt from the stored rows, intervals and histograms included>]}], "events": [...]}``."""
        raise NotImplementedError

    def resource_samples(self, study_id: int) -> list[dict[str, Any]]:
        """Rows of (cell_index, trial_index, t, scope, metric, value)."""
        raise NotImplementedError
