"""The names for JSON caplab writes and reads where its keys are open (an experiment's outcome, a
role's counters, a probe of the machine): a leaf every layer may import, so a writer in
experiments and a reader in store name the same thing without importing each other, and no
signature needs ``Any``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias, TypeGuard

JsonObject: TypeAlias = Mapping[str, object]
"""A JSON object as read: its keys are not fixed by caplab's types, its values are checked where
they are used."""

JsonDict: TypeAlias = dict[str, object]
"""A JSON object being built: the document a ``to_json`` returns, or an outcome filled in steps."""


def member(obj: JsonObject, key: str) -> JsonObject:
    """A nested object; empty when absent or not an object."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def items(obj: JsonObject, key: str) -> list[object]:
    """A list's items; empty when absent or not a list."""
    value = obj.get(key)
    return list(value) if isinstance(value, list) else []


def number(obj: JsonObject, key: str) -> float | None:
    """A number (an integer stays one); None when absent, null, a boolean or not a number."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def text(obj: JsonObject, key: str) -> str | None:
    """A string; None when absent or not a string."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def pair(obj: JsonObject, key: str) -> tuple[float, float] | None:
    """Two numbers stored as a list (an interval's ends); None when absent or anything else."""
    match obj.get(key):
        case [low, high] if _is_number(low) and _is_number(high):
            return (float(low), float(high))
    return None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
