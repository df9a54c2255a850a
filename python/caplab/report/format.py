"""How the report writes its figures: one rule for every table, sentence and chart label, so a
number reads the same in index.html, report.md and the terminal (and tests can find it)."""

from __future__ import annotations

from typing import Any

from caplab.store.urls import scrub
from caplab.units import factors_text
from caplab.units import is_number as is_number

DASH = "—"
LABEL_VALUE_CHARS = 24
"""A factor value longer than this (a command line in a zip group) is cut in labels."""


def num(value: Any, digits: int = 3) -> str:
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


def rate(value: Any) -> str:
    """Requests (or documents) per second: ``928/s``."""
    return DASH if value is None else f"{num(value)}/s"


def load(value: Any, unit: str) -> str:
    """A load in the search's unit: a rate (``/s``) or a number of users."""
    if value is None:
        return DASH
    return rate(value) if unit == "req/s" else f"{num(value)} users"


def pct(fraction: Any) -> str:
    """A fraction as a percentage: 0.97 → ``97%``; small ones keep a decimal (``2.5%``)."""
    if not is_number(fraction):
        return DASH
    p = 100.0 * fraction
    return f"{p:.1f}%" if 0 < abs(p) < 10 else f"{p:,.0f}%"


def percent(value: Any) -> str:
    """A figure already in percent (CPU % of one core, disk busy %): ``84%``."""
    return pct(value / 100.0) if is_number(value) else DASH


def ms(value: Any) -> str:
    return DASH if value is None else f"{num(value)} ms"


def minutes(seconds: Any) -> str:
    if not is_number(seconds):
        return DASH
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def interval(low: Any, high: Any, unit: str = "") -> str:
    """A confidence interval: ``[890, 950]/s``."""
    if low is None or high is None:
        return DASH
    suffix = "/s" if unit == "req/s" else ""
    return f"[{num(low)}, {num(high)}]{suffix}"


def cell_label(factors: dict[str, Any]) -> str:
    """The cell as people name it: ``workers=2 stores=4``; long values cut, passwords masked."""
    # Masked before cutting: a cut could drop the '@' that marks where a password ends.
    masked = {k: scrub(str(v)) for k, v in factors.items()}
    short = {
        k: v if len(v) <= LABEL_VALUE_CHARS else v[: LABEL_VALUE_CHARS - 1] + "…" for k, v in masked.items()
    }
    return factors_text(short)


def text(value: Any) -> str:
    """Free text from the store (errors, notes) on one line, passwords masked."""
    return scrub(" ".join(str(value).split())) if value is not None else DASH
