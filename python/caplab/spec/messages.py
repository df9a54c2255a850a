"""pydantic's validation errors worded for a study's author, with the file, line and field:
``study.yaml:7: load.duraton: unknown field (did you mean duration?)``."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from caplab.spec.errors import KeyPath, line_of, raw_at
from caplab.spec.factors import FACTOR_REF, cell_note
from caplab.spec.fields import Scalar
from caplab.spec.hardware import LinkSpec, ProfileSpec, ScaleSpec, VolumeSpec
from caplab.spec.load import LoadSection
from caplab.spec.replicates import ReplicatesSpec
from caplab.spec.study import StudyConfig
from caplab.spec.sut import ReadySpec, RoleSpecModel, SutSpec
from caplab.spec.target import HttpTarget, TargetSpec, TcpTarget


def _suggest(name: str, model_fields: list[str]) -> str:
    close = difflib.get_close_matches(name, model_fields, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _fields_at(loc: KeyPath, root: type[BaseModel] = StudyConfig) -> list[str]:
    """Field names valid at a location, for did-you-mean suggestions."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        if model is None or not isinstance(part, str):
            continue
        field = model.model_fields.get(part)
        if field is None:
            continue  # a mapping key (a role's name) or a list index: the model is unchanged
        model = _model_of(field.annotation)
    if model is None:
        return []
    names = list(model.model_fields)
    return [*names, "factors", "findings"] if model is StudyConfig else names


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found is not None:
            return found
    return None


_TYPE_TAGS = frozenset(
    {"int", "float", "str", "bool", "none", "list", "dict"}
    | {
        cls.__name__
        for cls in (
            HttpTarget,
            TcpTarget,
            TargetSpec,
            ReadySpec,
            RoleSpecModel,
            SutSpec,
            LoadSection,
            ProfileSpec,
            VolumeSpec,
            LinkSpec,
            ScaleSpec,
            ReplicatesSpec,
        )
    }
)


def format_error(
    path: Path,
    lines: dict[KeyPath, int],
    err: Any,
    data: Any,
    cell: dict[str, Scalar],
    root: type[BaseModel] = StudyConfig,
) -> str:
    loc: KeyPath = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    # pydantic puts union members' type names ("ReadySpec", "int") into loc; drop those, not keys.
    loc = tuple(p for p in loc if not (isinstance(p, str) and p in _TYPE_TAGS))
    field = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        message = f"unknown field{_suggest(str(loc[-1]), _fields_at(loc, root))}"
    elif err["type"] == "missing":
        message = "required field is missing"
    else:
        message = str(err["msg"]).removeprefix("Value error, ")
        if "input" in err and isinstance(err["input"], str) and FACTOR_REF.search(err["input"]):
            message += f" (got {err['input']!r}: is the factor name right?)"
    return f"{path}:{line_of(lines, loc)}: {field}: {message}{cell_note(raw_at(data, loc), cell)}"
