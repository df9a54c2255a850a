"""The report reads the spec's defaults from the study as validated (stored with the study since
the store kept it) and, for a study stored before, from the one copy of them it keeps: both give
the same report, and that copy is the spec's own defaults."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from pydantic import BaseModel

from caplab.report.document import build_results
from caplab.report.model.scenario import scenario, study_spec
from caplab.report.model.spec_defaults import OLD_STUDY_DEFAULTS
from caplab.spec.load import LoadSection
from caplab.spec.search import GoalSpec, SearchSpec
from caplab.spec.target import HttpTarget
from caplab.store.document import StudyRecord
from caplab.store.reading import SampleRow

SPEC_MODELS: dict[tuple[str, ...], type[BaseModel]] = {
    ("load",): LoadSection,
    ("search",): SearchSpec,
    ("goal",): GoalSpec,
    ("target", "http"): HttpTarget,
}


def test_the_report_is_the_same_with_and_without_the_validated_study(
    study_document: dict[str, Any], study_samples: list[SampleRow]
) -> None:
    assert study_document["study"].get("validated"), "the runner stores the validated study"
    old = copy.deepcopy(study_document)
    del old["study"]["validated"]
    assert build_results(study_document, study_samples, "then") == build_results(old, study_samples, "then")


def test_a_setting_the_file_left_out_is_read_from_the_validated_study() -> None:
    record = StudyRecord(
        id=1,
        name="s",
        status="complete",
        created_at=None,
        finished_at=None,
        spec="name: s\nload: {rate: '{rate}'}\nsearch: {precision: 2%}\n",
        spec_path=None,
        caplab_version=None,
        environment={},
        validated={"load": {"rate": 100.0, "duration": 12.0, "repeat": 2}, "search": {"trial": 4.0}},
    )
    s = scenario(study_spec(record))
    assert (s["rate"], s["duration_s"], s["repeat"]) == ("{rate}", 12.0, 2), "as written, else validated"
    assert s["search"] is not None
    assert (s["search"]["precision"], s["search"]["trial_s"]) == (0.02, 4.0)
    before = scenario(study_spec(dataclasses.replace(record, validated=None)))
    assert (before["duration_s"], before["repeat"], before["warmup_s"]) == (30.0, 1, 0.0)
    assert before["search"] is not None and before["search"]["trial_s"] == 3.0


def test_the_reports_copy_of_the_defaults_is_the_specs() -> None:
    for path, default in OLD_STUDY_DEFAULTS.items():
        field = SPEC_MODELS[path[:-1]].model_fields[path[-1]]
        assert field.default == default, f"{'.'.join(path)}: the spec says {field.default!r}"
