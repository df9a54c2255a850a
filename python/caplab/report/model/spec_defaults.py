"""The spec's defaults for what a study file left out, so that the report states what was run
(a 30 s trial when the file gave no ``duration:``) without repeating the spec's defaults.

A study stored since the store kept the validated study (``StudyRecord.validated``) carries them:
they are read from there. A study stored before has only its file as written, and the report
cannot import the spec (tests/test_layering.py: report sits above store, not spec), so for those
alone the defaults are written out once, here, beside the spec field each one mirrors.

What the file wrote always wins over either: the report states a setting as the user wrote it
(``{workers}`` as a placeholder, not the first cell's value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from caplab.json_types import JsonObject, member

DefaultKey = tuple[str, ...]
"""A setting's path in the study file: ``("load", "duration")``."""

DEFAULT_HEADROOM = 0.25  # spec.search.GoalSpec.headroom
"""The headroom a study is sized with when its ``goal:`` gives none, or it has no goal."""

DEFAULT_PRECISION = 0.05  # spec.search.SearchSpec.precision
"""The search's precision when its ``precision:`` cannot be read as a fraction."""

OLD_STUDY_DEFAULTS: Mapping[DefaultKey, object] = {
    ("load", "duration"): 30.0,  # spec.load.LoadSection.duration
    ("load", "warmup"): 0.0,  # spec.load.LoadSection.warmup
    ("load", "repeat"): 1,  # spec.load.LoadSection.repeat
    ("load", "schedule"): "constant",  # spec.load.LoadSection.schedule
    ("search", "precision"): DEFAULT_PRECISION,
    ("search", "trial"): 3.0,  # spec.search.SearchSpec.trial
    ("search", "repeats"): 3,  # spec.search.SearchSpec.repeats
    ("goal", "headroom"): DEFAULT_HEADROOM,
    ("target", "http", "method"): "GET",  # spec.target.HttpTarget.method
}
"""The spec's defaults for a study stored before the validated study was kept (and the report's
only copy of them): each must equal the spec field named beside it (tests/report check they do)."""

ALWAYS_STATED = "load"
"""The section whose defaults the report states even when the file has none (a job study's
scenario has always read as a 30 s constant load): every other section the file left out stays
out (no ``search:`` is no search, not one with default settings)."""


def with_defaults(written: JsonObject, validated: JsonObject | None) -> JsonObject:
    """The study file as written, each defaulted setting it left out filled in: from the study as
    validated when stored (and it has the setting), else from ``OLD_STUDY_DEFAULTS``."""
    filled = dict(written)
    if not isinstance(filled.get(ALWAYS_STATED), Mapping):
        filled[ALWAYS_STATED] = {}
    for key, old_default in OLD_STUDY_DEFAULTS.items():
        section = _writable(filled, key[:-1])
        if section is None or key[-1] in section:
            continue
        stored = _at(validated, key) if validated is not None else None
        section[key[-1]] = stored if stored is not None else old_default
    return filled


def _writable(obj: dict[str, object], path: DefaultKey) -> dict[object, object] | None:
    """The section at ``path``, copied (with the sections on its way) so that filling it never
    alters what was parsed; None when the file has no such section. Keys stay as written."""
    here: dict[object, object] = cast(dict[object, object], obj)
    for name in path:
        child = here.get(name)
        if not isinstance(child, Mapping):
            return None
        copied: dict[object, object] = dict(child)
        here[name] = copied
        here = copied
    return here


def _at(obj: JsonObject, path: DefaultKey) -> object:
    for name in path[:-1]:
        obj = member(obj, name)
    return obj.get(path[-1])
