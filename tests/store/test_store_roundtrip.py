"""What goes in comes out: a trial's engine result rebuilt from rows equals RunResult.raw."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from caplab.collect.base import ResourceSample
from caplab.engine import RunResult
from caplab.json_types import members
from caplab.store import Store
from caplab.store.codec import rebuild_result, split_result
from support.stores import Filled, same_json, samples_for


def test_each_stored_trial_rebuilds_the_engine_result(
    store: Store, filled: Filled, run_result: RunResult
) -> None:
    doc = store.study_document(filled.study_id)
    trials = doc.cells[0].trials
    assert [t.index for t in trials] == [0, 1]
    for t in trials:
        assert t.kind == "fixed" and t.status == "complete"
        assert same_json(dict(t.result), run_result.raw)
        assert list(t.result) == list(run_result.raw), "the engine's key order is kept"
    assert same_json(store.trial_result(filled.trial_ids[0]), run_result.raw)
    json.dumps(doc.to_json())  # the whole document is JSON as it stands


def test_histograms_are_stored_per_class_and_for_all_classes(run_result: RunResult) -> None:
    parts = split_result(run_result.raw)
    keys = sorted((h.class_name, h.kind) for h in parts.histograms)
    assert keys == sorted((c, k) for c in ["*", "browse", "buy"] for k in ["latency", "service_time"])
    assert not any(k.endswith("_hdr") for k in parts.summary)
    assert not any(k.endswith("_hdr") for c in members(parts.summary, "classes") for k in c)
    assert "intervals" not in parts.summary


def test_fields_a_newer_engine_adds_survive_the_round_trip(raw_copy: Callable[[], dict[str, Any]]) -> None:
    raw = raw_copy()
    raw["new_total"] = 7
    raw["intervals"][0]["gc_pauses"] = 2
    raw["intervals"][0]["latency_ms"]["p9999"] = 3.5
    raw["classes"][0]["queue_hdr"] = "HISTFAKE"
    parts = split_result(raw)
    # p95 has no column of its own either: it rides in extra beside the new fields
    p95 = {"p95": raw["intervals"][0]["latency_ms"]["p95"]}
    assert parts.intervals[0]["extra"] == {"gc_pauses": 2, "latency_ms": {**p95, "p9999": 3.5}}
    rebuilt = rebuild_result(json.loads(json.dumps(parts.summary)), parts.intervals, parts.histograms)
    assert rebuilt == raw


def test_duplicate_request_class_names_are_refused_before_anything_is_written(
    store: Store, filled: Filled, run_result: RunResult, raw_copy: Callable[[], dict[str, Any]]
) -> None:
    raw = raw_copy()
    raw["classes"][1]["name"] = raw["classes"][0]["name"]
    twin = RunResult.from_json(json.dumps(raw))
    with pytest.raises(ValueError, match="unique"):
        store.save_trial(filled.cell_ids[1], 0, twin, [])
    assert store.study_document(filled.study_id).cells[1].trials == ()


def test_the_document_carries_study_cells_and_events(store: Store, filled: Filled) -> None:
    typed = store.study_document(filled.study_id)
    study = typed.study
    assert study.id == filled.study_id and study.name == "checkout" and study.status == "failed"
    assert (study.spec or "").startswith("name: checkout") and (study.created_at or "").endswith("+00:00")
    assert study.finished_at is not None and study.environment == {"host": "x"}
    first, second = typed.cells
    assert (first.index, first.factors, first.status) == (0, {"workers": 1}, "complete")
    latency = first.metrics.part("latency_ms")
    assert latency is not None and latency["p99"] is not None
    assert first.resources == {"host": {"cpu_percent": 42.0}}
    assert (second.status, second.error, second.trials) == ("failed", "SUT exited with status 3", ())
    assert [e.to_json() for e in typed.events] == [
        {
            "at": typed.events[0].at,
            "kind": "cell_failed",
            "message": "SUT exited with status 3",
            "cell_index": 1,
            "trial_index": None,
        }
    ]


def test_resource_samples_come_back_in_long_format(
    store: Store, filled: Filled, run_result: RunResult
) -> None:
    rows = store.resource_samples(filled.study_id)
    expected = samples_for(run_result)
    assert len(rows) == 2 * len(expected)
    first_trial = [r for r in rows if r["trial_index"] == 0]
    assert [(r["t"], r["scope"], r["metric"], r["value"]) for r in first_trial] == [
        (s.t, s.scope, s.metric, s.value) for s in expected
    ]
    assert {r["cell_index"] for r in rows} == {0}
    assert set(rows[0]) >= {"cell_index", "trial_index", "t", "scope", "metric", "value"}


def test_samples_without_a_finite_value_are_left_out(
    store: Store, filled: Filled, run_result: RunResult
) -> None:
    samples = [
        ResourceSample(1.0, "host", "cpu_percent", 50.0),
        ResourceSample(1.0, "disk:sda", "busy_percent", float("nan")),
        ResourceSample(1.0, "net:lo", "rx_mb_s", float("inf")),
    ]
    store.save_trial(filled.cell_ids[1], 0, run_result, samples)
    rows = [r for r in store.resource_samples(filled.study_id) if r["cell_index"] == 1]
    assert [(r["scope"], r["value"]) for r in rows] == [("host", 50.0)]


def test_timestamps_are_timezone_aware_utc(store: Store, filled: Filled) -> None:
    rows = store.trial_rows(filled.study_id)
    assert all(r["started_at"].utcoffset() == timedelta(0) for r in rows)
    study = store.list_studies()[0]
    assert study.created_at.endswith("+00:00") and study.created_at <= (study.finished_at or "")
