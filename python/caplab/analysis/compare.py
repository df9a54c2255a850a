"""Two runs compared cell by cell: this configuration against that one, this release against the
last. A difference is called real only when its interval excludes no change; otherwise the two are
indistinguishable, never ranked (measurement rule 6).

The ratio is B / A (above 1: B carries more). Its interval comes from the two capacities' own 95 %
intervals by interval arithmetic — B's low over A's high, B's high over A's low — which holds at
least 90 % (each end at 95 %) and is wider than a bootstrap of the replicates would be: it can call
a real difference indistinguishable, never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Change(Enum):
    FASTER = "faster"
    SLOWER = "slower"
    INDISTINGUISHABLE = "indistinguishable"
    UNKNOWN = "no interval"
    """A side without an interval (one search, no replicates) or without a capacity."""


@dataclass(frozen=True)
class Figure:
    """One cell's capacity in one run: its value and 95 % interval (None where it has none)."""

    value: float | None
    low: float | None
    high: float | None
    unit: str
    limit: str | None


@dataclass(frozen=True)
class CellComparison:
    key: str
    """The cell's factors, as both runs name them."""
    a: Figure
    b: Figure
    ratio: float | None
    low: float | None
    high: float | None
    change: Change

    @property
    def limit_changed(self) -> str | None:
        """``was cpu:engine, now volume:log``, or None when the limit is the same."""
        if self.a.limit == self.b.limit:
            return None
        return f"was {self.a.limit or 'none'}, now {self.b.limit or 'none'}"

    def slower_than(self, fraction: float) -> bool:
        """Whether B is slower than A by more than ``fraction`` with the interval excluding it: the
        interval's high end below 1 − fraction."""
        return self.high is not None and self.high < 1.0 - fraction


def compare_figures(key: str, a: Figure, b: Figure) -> CellComparison:
    if a.value is None or b.value is None or a.value <= 0 or a.unit != b.unit:
        return CellComparison(key, a, b, None, None, None, Change.UNKNOWN)
    ratio = b.value / a.value
    if None in (a.low, a.high, b.low, b.high) or not a.low or a.low <= 0:
        return CellComparison(key, a, b, ratio, None, None, Change.UNKNOWN)
    assert a.high is not None and b.low is not None and b.high is not None
    low, high = b.low / a.high, b.high / a.low
    change = Change.FASTER if low > 1.0 else Change.SLOWER if high < 1.0 else Change.INDISTINGUISHABLE
    return CellComparison(key, a, b, ratio, low, high, change)


def compare_runs(a: dict[str, Figure], b: dict[str, Figure]) -> tuple[list[CellComparison], list[str]]:
    """Every cell both runs have, compared; and the keys only one of them has."""
    both = [k for k in a if k in b]
    only = sorted(set(a) ^ set(b))
    return [compare_figures(k, a[k], b[k]) for k in both], only


def relative(figures: dict[str, Figure], reference: str) -> dict[str, Figure]:
    """Each cell's figure over the ``reference`` cell's in the same run (the reference itself left
    out: 1 by definition), its interval by interval arithmetic as above. Two runs on different
    machines are compared by these: how their configurations stand to one another, where their
    absolute figures mix the configurations with the machines."""
    ref = figures[reference]
    out: dict[str, Figure] = {}
    for key, f in figures.items():
        if key == reference:
            continue
        unit = f"× {reference}"
        if f.value is None or ref.value is None or ref.value <= 0 or f.unit != ref.unit:
            out[key] = Figure(None, None, None, unit, f.limit)
            continue
        low = high = None
        if f.low is not None and f.high is not None and ref.low and ref.high and ref.low > 0:
            low, high = f.low / ref.high, f.high / ref.low
        out[key] = Figure(f.value / ref.value, low, high, unit, f.limit)
    return out


def compare_within_runs(
    a: dict[str, Figure], b: dict[str, Figure]
) -> tuple[list[CellComparison], list[str], str | None]:
    """Two runs on different machines: each cell relative to a reference cell both runs measured
    (the first with a figure in both), then compared as ``compare_runs`` does. Returns the
    comparisons, the keys only one run has, and the reference (None: no cell to refer to)."""
    both = [k for k in a if k in b]
    reference = next((k for k in both if a[k].value and b[k].value), None)
    only = sorted(set(a) ^ set(b))
    if reference is None:
        return [], only, None
    cells, _ = compare_runs(relative(a, reference), relative(b, reference))
    return cells, only, reference
