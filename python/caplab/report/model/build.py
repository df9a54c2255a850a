"""What the study measured, as the results document holds it: a pure function of the study
document (``Store.study_document``) and its resource samples, so it can be built from any study."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from caplab.report.model.cells import cell_result, samples_by_trial
from caplab.report.model.consolidation import consolidation_entries
from caplab.report.model.jobs import job_entries
from caplab.report.model.matrix import capacity_entries, matrix, scaling_entries
from caplab.report.model.outage import failover_summary
from caplab.report.model.paper import paper_comparison
from caplab.report.model.paper_recovery import paper_recovery
from caplab.report.model.scenario import goal_of, naming_factors, scenario, study_spec
from caplab.report.model.series import cell_series
from caplab.report.model.types import Environment, Event, Measured, StudyInfo
from caplab.store.document import EventRecord, StudyDocument, StudyRecord
from caplab.store.reading import SampleRow

SCHEMA = "caplab-report/1"


def _elapsed(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None


def _study(study: StudyRecord) -> StudyInfo:
    return {
        "id": study.id,
        "name": study.name,
        "status": study.status,
        "created_at": study.created_at,
        "finished_at": study.finished_at,
        "elapsed_s": _elapsed(study.created_at, study.finished_at),
        "spec_path": study.spec_path,
        "store": study.store,
        "caplab_version": study.caplab_version,
    }


def _event(e: EventRecord) -> Event:
    return {"at": e.at, "kind": e.kind, "message": e.message, "cell": e.cell_index}


def build_measured(
    document: StudyDocument, sample_rows: list[SampleRow], generated_at: str | None = None
) -> Measured:
    """The results document's measurements (everything but the text written from them)."""
    study = document.study
    spec = study_spec(study)
    samples = samples_by_trial(sample_rows)
    raw_cells = list(document.cells)
    naming = naming_factors(spec, raw_cells)
    cells = [cell_result(c, samples, naming) for c in raw_cells]
    goal = goal_of(spec)
    jobs = job_entries(spec, raw_cells, cells)
    series = [
        s for raw, c in zip(raw_cells, cells, strict=True) for s in cell_series(raw, samples, c["roles"])
    ]
    return {
        "schema": SCHEMA,
        "generated_at": generated_at or datetime.now(UTC).isoformat(timespec="seconds"),
        "study": _study(study),
        "environment": cast(Environment, dict(study.environment)),  # the probe's JSON
        "scenario": scenario(spec),
        "goal": goal,
        "matrix": matrix(cells, naming),
        "cells": cells,
        "capacity": capacity_entries(cells, goal),
        "scaling": scaling_entries(document, {c["index"]: c["label"] for c in cells}),
        "events": [_event(e) for e in document.events],
        "series": series,
        "consolidation": consolidation_entries(spec, raw_cells, samples),
        "jobs": jobs,
        "paper": paper_comparison(spec, cells),
        "paper_recovery": paper_recovery(spec, cells),
        "failover": failover_summary(raw_cells, cells, jobs is not None),
    }
