"""results.json has exactly the shape its types declare (``caplab.report.model.types``): mypy checks
the code against the types, this checks the types against the documents real studies produce — a
key added to a builder but not to the types (or the reverse) fails here."""

from __future__ import annotations

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


def test_the_shape_check_finds_an_undeclared_key(built: Built) -> None:
    """The check above can fail: a key the types do not declare is reported with its path."""
    results = {**built.scaleout.results, "cells": [{**built.scaleout.results["cells"][0], "extra": 1}]}
    found = _mismatch(results, Results, "results")
    assert found == "results.cells[0]: missing [], not in the types ['extra']"
