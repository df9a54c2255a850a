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

EMPTY: JsonObject = {}
"""The empty object a reader gets for a member that is absent or not an object."""


def number(obj: JsonObject, key: str) -> float | None:
    """A number (an integer stays one); None when absent, null, a boolean or not a number."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def integer(obj: JsonObject, key: str) -> int | None:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(obj: JsonObject, key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def flag(obj: JsonObject, key: str) -> bool | None:
    value = obj.get(key)
    return value if isinstance(value, bool) else None


def truthy(obj: JsonObject, key: str) -> bool:
    """The key's value as a condition: absent, null, 0 and empty are False."""
    return bool(obj.get(key))


def member(obj: JsonObject, key: str) -> JsonObject:
    """A nested object; empty when absent or not an object."""
    value = obj.get(key)
    return as_object(value)


def optional_member(obj: JsonObject, key: str) -> JsonObject | None:
    """A nested object, or None when absent or not an object."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else None


def members(obj: JsonObject, key: str) -> list[JsonObject]:
    """A list of objects (items that are not objects are left out); empty when absent."""
    return [as_object(v) for v in items(obj, key) if isinstance(v, Mapping)]


def items(obj: JsonObject, key: str) -> list[object]:
    """A list's items; empty when absent or not a list."""
    value = obj.get(key)
    return list(value) if isinstance(value, list | tuple) else []


def strings(obj: JsonObject, key: str) -> list[str]:
    """A list's items as text (a non-text item in words)."""
    return [str(v) for v in items(obj, key)]


def as_object(value: object) -> JsonObject:
    """``value`` when it is a JSON object, else an empty one."""
    if not isinstance(value, Mapping):
        return EMPTY
    return {str(k): v for k, v in value.items()}


JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""Any value JSON can hold, for the places that pass a value on whatever its shape (a result's
summary field, an interval's unknown extra): read it with the accessors above, never as ``Any``."""

JsonRow: TypeAlias = dict[str, JsonValue]
"""A mutable JSON object built or rebuilt by the store (a result, a summary, an interval row)."""


def pair(obj: JsonObject, key: str) -> tuple[float, float] | None:
    """Two numbers stored as a list (an interval's ends); None when absent or anything else."""
    match obj.get(key):
        case [low, high] if _is_number(low) and _is_number(high):
            return (float(low), float(high))
    return None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
