"""A study's life in the store as the runner drives it: create, cells, statuses, resume, list."""

from __future__ import annotations

import pytest

from caplab.engine import RunResult
from caplab.store import Store
from support.stores import Filled, fill


def test_add_cells_creates_missing_cells_only_and_returns_all_in_order(store: Store) -> None:
    study_id = store.create_study("s", "name: s", "s.yaml", {})
    first = store.add_cells(study_id, [{"w": 1}, {"w": 2}])
    store.set_cell_status(first[0].id, "complete", metrics={"throughput": 10.0})
    again = store.add_cells(study_id, [{"w": 1}, {"w": 2}, {"w": 3}])
    assert [(c.index, c.factors, c.status) for c in again] == [
        (0, {"w": 1}, "complete"),
        (1, {"w": 2}, "pending"),
        (2, {"w": 3}, "pending"),
    ]
    assert [c.id for c in again[:2]] == [c.id for c in first]
    assert again[0].metrics == {"throughput": 10.0}


def test_cell_status_carries_its_error_metrics_and_resources(store: Store) -> None:
    study_id = store.create_study("s", "name: s", "s.yaml", {})
    (cell,) = store.add_cells(study_id, [{}])
    store.set_cell_status(cell.id, "running")
    store.set_cell_status(cell.id, "failed", error="boom", metrics={"trials": 1, "ratio": float("nan")})
    (row,) = store.cells(study_id)
    assert (row.status, row.error, row.resources) == ("failed", "boom", None)
    assert row.metrics == {"trials": 1, "ratio": None}
    with pytest.raises(ValueError, match="cell status"):
        store.set_cell_status(cell.id, "done")
    with pytest.raises(KeyError, match="no cell with id 999"):
        store.set_cell_status(999, "running")


def test_find_resumable_wants_the_same_name_and_spec_and_an_unfinished_study(store: Store) -> None:
    done = store.create_study("s", "spec A", "s.yaml", {})
    store.finish_study(done, "complete")
    assert store.find_resumable("s", "spec A") is None
    older = store.create_study("s", "spec A", "s.yaml", {})
    store.finish_study(older, "interrupted")
    newer = store.create_study("s", "spec A", "s.yaml", {})
    store.finish_study(newer, "failed")
    assert store.find_resumable("s", "spec A") == newer
    assert store.find_resumable("s", "spec B") is None
    assert store.find_resumable("t", "spec A") is None
    store.reopen_study(newer)
    assert store.study(newer).status == "running" and store.study(newer).finished_at is None


def test_reset_cell_forgets_an_earlier_attempt(store: Store, filled: Filled) -> None:
    store.reset_cell(filled.cell_ids[0])
    (cell, _) = store.cells(filled.study_id)
    assert (cell.status, cell.metrics, cell.error) == ("pending", None, None)
    assert store.trial_rows(filled.study_id) == []
    assert store.resource_samples(filled.study_id) == []


def test_list_and_resolve_studies(store: Store, run_result: RunResult) -> None:
    with pytest.raises(KeyError, match="no studies yet"):
        store.resolve_study("latest")
    a = fill(store, run_result)
    b = store.create_study("other", "name: other", "o.yaml", {})
    rows = store.list_studies()
    assert [(r.id, r.name, r.status, r.cells_total, r.cells_complete) for r in rows] == [
        (a.study_id, "checkout", "failed", 2, 1),
        (b, "other", "running", 0, 0),
    ]
    assert rows[1].finished_at is None
    assert store.resolve_study("latest") == b
    assert store.resolve_study(str(a.study_id)) == a.study_id
    assert store.resolve_study("checkout") == a.study_id
    with pytest.raises(KeyError, match="no study 12345 in"):
        store.resolve_study("12345")
    with pytest.raises(KeyError):
        store.cells(12345)


def test_statuses_are_checked(store: Store) -> None:
    study_id = store.create_study("s", "name: s", "s.yaml", {})
    with pytest.raises(ValueError, match="study status"):
        store.finish_study(study_id, "finished")
