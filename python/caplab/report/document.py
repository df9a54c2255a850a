"""The results document: every number the report shows, built from the study as stored, and the
text written from those numbers (observations, recommendation).

``build_results`` is a pure function of the study document (``Store.study_document``) and its
resource samples, so it can be tested on any study; ``load_results`` reads both from a store.
The document is strict JSON (no NaN or Infinity, passwords masked): results.json is this document,
and the HTML and Markdown are written from it alone. Its shape is ``model.types.Results``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from caplab.report.model.build import SCHEMA, build_measured
from caplab.report.model.findings import study_findings
from caplab.report.model.methodology import study_methodology
from caplab.report.model.scenario import study_spec
from caplab.report.model.types import FindingEntry, Measured, Results
from caplab.report.text.observations import observe
from caplab.report.text.pricing import study_cost, study_endurance
from caplab.report.text.recommend import recommend
from caplab.store.document import StudyDocument
from caplab.store.reading import SampleRow
from caplab.store.repository import Store
from caplab.store.urls import scrub_json

__all__ = ["SCHEMA", "build_results", "dumps", "load_results"]


def load_results(store: Store, study_id: int) -> Results:
    """Reads the study and its samples from the store and builds the results document."""
    return build_results(store.study_document(study_id), store.resource_samples(study_id))


def judged_findings(document: StudyDocument, sample_rows: Sequence[SampleRow]) -> list[FindingEntry]:
    """The study's findings judged, as results.json has them, for `caplab show`: empty, with
    nothing else built, when the study file states none."""
    spec = study_spec(document.study)
    if not spec.get("findings"):
        return []
    measured = cast(Measured, scrub_json(build_measured(document, list(sample_rows), None)))
    return study_findings(spec, measured)


def build_results(
    document: StudyDocument | Mapping[str, object],
    sample_rows: Sequence[SampleRow],
    generated_at: str | None = None,
) -> Results:
    """The results document (see the module docstring and the report's README section), from
    the study document or its JSON (``StudyDocument.to_json``, any format version it reads)."""
    study = document if isinstance(document, StudyDocument) else StudyDocument.from_json(document)
    # Masked (and NaN nulled) before any text is written from it: scrub_json keeps the shape.
    measured = cast(Measured, scrub_json(build_measured(study, list(sample_rows), generated_at)))
    observations = observe(measured)
    recommendation = recommend(measured, observations)
    results: Results = {
        **measured,
        "findings": study_findings(study_spec(study.study), measured),
        "observations": observations,
        "recommendation": recommendation,
        "cost": study_cost(recommendation),
        "endurance": study_endurance(measured["cells"], recommendation),
        "methodology": study_methodology(study, measured),
    }
    return cast(Results, scrub_json(results))


def dumps(results: Results) -> str:
    """results.json's text: strict JSON (a NaN left anywhere is a bug, and raises here)."""
    return json.dumps(results, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
