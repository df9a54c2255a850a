"""results.json has exactly the shape its types declare (``caplab.report.model.types``): mypy checks
the code against the types, this checks the types against the documents real studies produce — a
key added to a builder but not to the types (or the reverse) fails here."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from caplab.report.model.types import Results
from support.reports import Built


def _mismatch(value: Any, expected: Any, path: str) -> str | None:
    """Where ``value`` does not have the type ``expected`` (None when it does)."""
    origin = get_origin(expected)
    if isinstance(expected, str | typing.ForwardRef) or expected is Any:  # the recursive Json alias
        return None
    if origin in (NotRequired, Required):
        return _mismatch(value, get_args(expected)[0], path)
    if origin in (types.UnionType, typing.Union):
        found = [_mismatch(value, option, path) for option in get_args(expected)]
        return None if None in found else next(f for f in found if f)
    if expected is type(None):
        return None if value is None else f"{path}: {value!r} is not null"
    if origin is Literal:
        return None if value in get_args(expected) else f"{path}: {value!r} not in {get_args(expected)}"
    if is_typeddict(expected):
        return _typed_dict(value, expected, path)
    if origin in (list, dict):
        return _collection(value, expected, path)
    if expected is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"{path}: {value!r} is not a number"
    return None if isinstance(value, expected) else f"{path}: {value!r} is not {expected.__name__}"


def _collection(value: Any, expected: Any, path: str) -> str | None:
    """A list's or an object's first item that does not have the item type."""
    if get_origin(expected) is list:
        if not isinstance(value, list):
            return f"{path}: not a list"
        (item,) = get_args(expected)
        return next((m for i, v in enumerate(value) if (m := _mismatch(v, item, f"{path}[{i}]"))), None)
    if not isinstance(value, dict):
        return f"{path}: not an object"
    _, item = get_args(expected)
    return next((m for k, v in value.items() if (m := _mismatch(v, item, f"{path}.{k}"))), None)


def _typed_dict(value: Any, expected: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return f"{path}: not an object"
    hints = get_type_hints(expected, include_extras=True)
    # NotRequired inside a string annotation is not seen by the class at runtime: read it from the hints.
    required = {k for k in expected.__required_keys__ if get_origin(hints[k]) is not NotRequired}
    missing = required - set(value)
    unknown = set(value) - set(hints)
    if missing or unknown:
        return f"{path}: missing {sorted(missing)}, not in the types {sorted(unknown)}"
    return next((m for k, v in value.items() if (m := _mismatch(v, hints[k], f"{path}.{k}"))), None)


@pytest.mark.parametrize("which", ["scaleout", "fixed"])
def test_results_json_has_the_declared_shape(built: Built, which: str) -> None:
    results = getattr(built, which).results
    assert _mismatch(results, Results, "results") is None


def test_results_json_with_findings_has_the_declared_shape(built: Built) -> None:
    """A study file's findings judged (a trend with its slope, a limit with its cells' words): the
    ``findings`` entries have the shape their types declare."""
    from caplab.report.document import build_results
    from caplab.store import Store

    with Store(built.db_url) as store:
        document = store.study_document(1).to_json()
        samples = store.resource_samples(1)
    document["study"]["spec"] += (  # type: ignore[index]
        "\nfindings:\n"
        "  - {claim: more workers more, paper: 2, trend: {metric: capacity, factor: workers, sign: rising}}\n"
        "  - {claim: cpu binds, limit: {kind: cpu}}\n"
    )
    results = build_results(document, samples)
    assert len(results["findings"]) == 2
    assert _mismatch(results, Results, "results") is None


def test_the_shape_check_finds_an_undeclared_key(built: Built) -> None:
    """The check above can fail: a key the types do not declare is reported with its path."""
    results = {**built.scaleout.results, "cells": [{**built.scaleout.results["cells"][0], "extra": 1}]}
    found = _mismatch(results, Results, "results")
    assert found == "results.cells[0]: missing [], not in the types ['extra']"


@pytest.mark.parametrize("study_id", [1, 2])
def test_stored_cell_documents_load_into_their_types_and_back_losslessly(built: Built, study_id: int) -> None:
    """Every cell a real study stored (searched, fixed, failed) reads into the document's types and
    writes back as the same JSON; the report built from that JSON is the one built from the types."""
    from caplab.report.document import build_results
    from caplab.store import Store, StudyDocument

    with Store(built.db_url) as store:
        typed = store.study_document(study_id)
        samples = store.resource_samples(study_id)
    stored = json.loads(json.dumps(typed.to_json()))
    assert StudyDocument.from_json(stored) == typed
    assert StudyDocument.from_json(stored).to_json() == stored
    assert {c.status for c in typed.cells} >= {"complete"}
    at = "2026-01-01T00:00:00+00:00"
    assert build_results(stored, samples, at) == build_results(typed, samples, at)


@pytest.mark.parametrize("which", ["scaleout", "fixed"])
def test_results_json_reads_back_as_written(built: Built, which: str) -> None:
    """results.json round-trips through its types' JSON unchanged (strict JSON, no NaN)."""
    from caplab.report.document import dumps

    written = getattr(built, which)
    text = (written.directory / "results.json").read_text(encoding="utf-8")
    assert dumps(json.loads(text)) == text
