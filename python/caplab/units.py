"""Parsing of the quantities people type: durations (``500ms``, ``30s``, ``2m``, ``1h``); and
what counts as a figure at all."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from caplab.store.urls import scrub

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


def factors_text(factors: dict[str, Any]) -> str:
    """The cell's factors for the terminal, any URL password masked."""
    return scrub(" ".join(f"{k}={v}" for k, v in factors.items())) or "(single cell)"


def varying_factors(cells: list[dict[str, Any]]) -> list[str]:
    """The factors that take more than one value across ``cells``, in study order: what tells
    cells apart (one held at a single value is said once, not in every row or label)."""
    names = list(dict.fromkeys(k for c in cells for k in c.get("factors") or {}))
    return [n for n in names if len({repr((c.get("factors") or {}).get(n)) for c in cells}) > 1]
