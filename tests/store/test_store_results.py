"""`caplab.results.load`: a stored study as pandas DataFrames for a notebook."""

from __future__ import annotations

import pandas as pd
import pytest

from caplab import results
from caplab.engine import RunResult
from caplab.store import Store
from support.stores import Filled


def test_load_gives_one_frame_per_level(
    store: Store, store_url: str, filled: Filled, run_result: RunResult
) -> None:
    r = results.load(filled.study_id, db=store_url)
    assert r.study.name == "checkout" and r.factors == ["workers"]

    assert list(r.cells["cell_index"]) == [0, 1] and list(r.cells["workers"]) == [1, 2]
    assert list(r.cells["status"]) == ["complete", "failed"]
    assert r.cells.loc[0, "throughput"] == run_result.throughput
    assert r.cells.loc[0, "latency_p99_ms"] == run_result.latency_ms.p99
    assert r.cells.loc[0, "host.cpu_percent"] == 42.0

    assert len(r.trials) == 2 and set(r.trials["trial_kind"]) == {"fixed"}
    first = r.trials.iloc[0]
    assert (first["workers"], first["sent"], first["throughput"]) == (
        1,
        run_result.sent,
        run_result.throughput,
    )
    assert first["latency_p99_ms"] == run_result.latency_ms.p99
    assert first["latency_count"] == run_result.latency_ms.count
    assert first["generator.saturated"] == run_result.generator.saturated
    assert isinstance(first["started_at"], pd.Timestamp) and str(first["started_at"].tz) == "UTC"

    n = len(run_result.intervals)
    assert len(r.intervals) == 2 * n
    one = r.intervals[r.intervals["trial_index"] == 0]
    assert list(one["interval"]) == list(range(n))
    assert list(one["throughput"]) == [i.throughput for i in run_result.intervals]
    # An interval too small for a p99 has none: the frame holds it as NaN, the result as None.
    assert [None if pd.isna(v) else v for v in one["p99_ms"]] == [
        i.latency_ms.p99 for i in run_result.intervals
    ]
    assert list(one["warmup"]) == [i.warmup for i in run_result.intervals]

    assert list(r.resources.columns[-4:]) == ["t", "scope", "metric", "value"]
    assert len(r.resources) == 2 * 3 * n and set(r.resources["workers"]) == {1}


def test_load_resolves_latest_and_names_and_uses_the_default_store(
    sqlite_url: str, run_result: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(sqlite_url) as store:
        first = store.create_study("a", "name: a", "a.yaml", {})
        second = store.create_study("b", "name: b", "b.yaml", {})
    monkeypatch.setenv("CAPLAB_DB", sqlite_url)
    assert results.load().study.id == second
    assert results.load("a").study.id == first


def test_an_empty_study_has_frames_with_their_columns(sqlite_url: str) -> None:
    with Store(sqlite_url) as store:
        study_id = store.create_study("a", "name: a", "a.yaml", {})
        store.add_cells(study_id, [{"rate": 100}])
    r = results.load(study_id, sqlite_url)
    assert list(r.cells.columns) == ["cell_index", "rate", "status", "error"]
    assert r.trials.empty and "throughput" in r.trials.columns
    assert r.intervals.empty and "p99_ms" in r.intervals.columns
    assert r.resources.empty and list(r.resources.columns[-4:]) == ["t", "scope", "metric", "value"]


def test_flatten_keeps_the_unit_last() -> None:
    nested = {
        "latency_ms": {"p99": 1.0, "count": 3},
        "generator": {"cpu_s": 0.1},
        "role:app": {"cpu_percent": 5},
    }
    assert results.flatten(nested) == {
        "latency_p99_ms": 1.0,
        "latency_count": 3,
        "generator.cpu_s": 0.1,
        "role:app.cpu_percent": 5,
    }


def test_a_metric_named_like_a_factor_does_not_overwrite_it(sqlite_url: str) -> None:
    with Store(sqlite_url) as store:
        study_id = store.create_study("a", "name: a", "a.yaml", {})
        (cell,) = store.add_cells(study_id, [{"users": 10}])
        store.set_cell_status(cell.id, "complete", metrics={"users": 7, "throughput": 1.0})
    r = results.load(study_id, sqlite_url)
    assert r.cells.loc[0, "users"] == 10 and r.cells.loc[0, "metrics.users"] == 7
