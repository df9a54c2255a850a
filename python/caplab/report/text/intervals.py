"""An interval named by what it is: one search's bracket (how precisely that run placed the
capacity) or a 95 % t-interval over replicates (how far another run would land). Only the second is
a confidence interval, and no table or chart may call the first one that."""

from __future__ import annotations

from collections.abc import Iterable

from caplab.report.model.types import IntervalKind


def interval_kind(kind: IntervalKind | None, replicates: int) -> str:
    """The short label written after an interval: ``(95%, 3 replicates)`` or ``(search bracket)``."""
    if kind == "replicates":
        return f"(95%, {replicates} replicates)"
    if kind == "search":
        return "(search bracket)"
    return ""


def error_bars(kinds: Iterable[tuple[IntervalKind | None, int]]) -> str:
    """What a chart's error bars are, from the kinds of interval drawn (``(kind, replicates)`` each)."""
    drawn = {(kind, replicates) for kind, replicates in kinds if kind}
    replicated = sorted({r for kind, r in drawn if kind == "replicates"})
    searched = any(kind == "search" for kind, _ in drawn)
    over = f"{' or '.join(str(r) for r in replicated)} replicates" if replicated else ""
    if replicated and searched:
        return (
            f"Error bars: the 95% t-interval over {over} where a configuration was replicated, else its "
            "one search's bracket (not a confidence interval)."
        )
    if replicated:
        return f"Error bars: the 95% t-interval over {over} (each on a fresh start of the system)."
    if searched:
        return (
            "Error bars: each configuration's one search bracket (how precisely that run placed its "
            "capacity), not a confidence interval: runs vary more than that."
        )
    return ""
