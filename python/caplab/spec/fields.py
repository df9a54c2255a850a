"""What every part of the study model shares: strict, frozen models and the field types
written the way a study file writes them (``30s``, ``5%``, ``256M``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from caplab.profiles import parse_size
from caplab.units import parse_duration

Scalar = int | float | str | bool
"""A factor's value, and what ``{factor}`` becomes in a cell."""


def as_seconds(value: Any) -> Any:
    """``30s``, ``2m``, ``500ms`` in seconds; a number is taken as seconds already."""
    if isinstance(value, str):
        return parse_duration(value)
    return value


Seconds = Annotated[float, BeforeValidator(as_seconds), Field(ge=0)]


class Strict(BaseModel):
    """Every section: an unknown key is an error (a misspelling, never ignored), and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def as_fraction(value: Any) -> Any:
    """``5%`` as 0.05; a number is a fraction already."""
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100.0
    return value


def as_size(value: Any) -> Any:
    """``256M``, ``4G`` or bytes, in bytes; anything else says what a size looks like."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return parse_size(value, "size")
        except ValueError:
            raise ValueError(f"{value!r} is not a size (examples: 256M, 4G, 1048576)") from None
    return value
