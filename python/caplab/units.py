"""The quantities people type and read: parsing durations (``500ms``, ``30s``, ``2m``, ``1h``),
what counts as a figure, and the one way every figure and factor is written — so a number reads
the same in the terminal, index.html and report.md (and tests can find it)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TypeGuard

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)?\s*$")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

DEFAULT_TIMEOUT_S = 30.0
"""How long one request may take before it counts as a ``timeout`` error (a study's
``load.timeout``, ``--timeout``; the engine's plan says the same in plan.rs)."""
DEFAULT_INTERVAL_S = 1.0
"""The length of one interval snapshot: the clock progress, collectors and series run on (a
study's ``load.interval``, ``--interval``)."""

DASH = "—"
"""What an absent figure reads as in the report."""
LABEL_VALUE_CHARS = 24
"""A factor value longer than this (a command line in a zip group) is cut in labels."""


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


# scheme://user:password@ — the password part is everything up to the last '@' of the authority.
_URL_PASSWORD = re.compile(
    r"""(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)(?P<pw>[^\s/"'<>]*)(?P<at>@)"""
)


def scrub(text: str) -> str:
    """Replaces the password of every ``scheme://user:password@`` URL inside free text: whatever
    caplab prints, stores or reports passes through here first."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***{m['at']}", text)


def is_number(value: object) -> TypeGuard[int | float]:
    """A figure (bool is not one, though Python says it is an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def num(value: object, digits: int = 3) -> str:
    """A figure to about ``digits`` significant digits, thousands separated; ``—`` when absent."""
    if value is None:
        return DASH
    if not is_number(value):
        return str(value)
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    return f"{value:.{digits}g}"


def rate(value: object) -> str:
    """Requests (or documents) per second: ``928/s``."""
    return DASH if value is None else f"{num(value)}/s"


def load(value: object, unit: str) -> str:
    """A load in the search's unit: a rate (``/s``: requests, or a job's items) or a number of users."""
    if value is None:
        return DASH
    return f"{num(value)} users" if unit == "users" else rate(value)


def pct(fraction: object) -> str:
    """A fraction as a percentage: 0.97 → ``97%``; small ones keep a decimal (``2.5%``)."""
    if not is_number(fraction):
        return DASH
    p = 100.0 * fraction
    return f"{p:.1f}%" if 0 < abs(p) < 10 else f"{p:,.0f}%"


def percent(value: object) -> str:
    """A figure already in percent (CPU % of one core, disk busy %): ``84%``."""
    return pct(value / 100.0) if is_number(value) else DASH


def ms(value: float | None) -> str:
    """A latency for the terminal, in the unit that keeps it short: ``850µs``, ``4.20ms``, ``1.30s``."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f}µs"
    if value < 1000:
        return f"{value:.2f}ms"
    return f"{value / 1000:.2f}s"


def minutes(seconds: object) -> str:
    """A span in seconds up to two minutes, then in minutes: ``45 s``, ``3.5 min``."""
    if not is_number(seconds):
        return DASH
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def interval(low: object, high: object, unit: str = "") -> str:
    """A confidence interval: ``[890, 950]/s``."""
    if low is None or high is None:
        return DASH
    suffix = "/s" if unit.endswith("/s") else ""
    return f"[{num(low)}, {num(high)}]{suffix}"


def factors_text(factors: Mapping[str, object]) -> str:
    """A cell's factors as ``workers=2 stores=4``, any URL password masked."""
    return scrub(" ".join(f"{k}={v}" for k, v in factors.items())) or "(single cell)"


def varying_factors(cells: Sequence[Mapping[str, object]]) -> list[str]:
    """The factors that take more than one value across ``cells`` (each with a ``factors``
    mapping), in study order: what tells cells apart (one held at a single value is said once,
    not in every row or label)."""
    tables = [_factors(c) for c in cells]
    names = list(dict.fromkeys(k for t in tables for k in t))
    return [n for n in names if len({repr(t.get(n)) for t in tables}) > 1]


def _factors(cell: Mapping[str, object]) -> Mapping[str, object]:
    factors = cell.get("factors")
    return factors if isinstance(factors, Mapping) else {}


def cell_label(factors: Mapping[str, object]) -> str:
    """The cell as people name it: ``workers=2 stores=4``; long values cut, passwords masked."""
    # Masked before cutting: a cut could drop the '@' that marks where a password ends.
    masked = {k: scrub(str(v)) for k, v in factors.items()}
    short = {
        k: v if len(v) <= LABEL_VALUE_CHARS else v[: LABEL_VALUE_CHARS - 1] + "…" for k, v in masked.items()
    }
    return factors_text(short)


def free_text(value: object) -> str:
    """Free text from the store (errors, notes) on one line, passwords masked; ``—`` when absent."""
    return scrub(" ".join(str(value).split())) if value is not None else DASH
