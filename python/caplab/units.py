"""Parsing of the quantities people type: durations (``500ms``, ``30s``, ``2m``, ``1h``); and
what counts as a figure at all."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)?\s*$")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str | float | int) -> float:
    """Seconds from ``500ms``, ``30s``, ``2m``, ``1h`` or a bare number of seconds."""
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"duration must be >= 0, got {text}")
        return float(text)
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (examples: 500ms, 30s, 2m)")
    return float(m.group(1)) * _SECONDS[m.group(2)]


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:g}s"
    return f"{seconds / 60:g}m"


def is_number(value: Any) -> TypeGuard[int | float]:
    """A figure (bool is not one, though Python says it is an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
