"""The matrix read along one factor: the cells that differ only in that factor, in its order.

Both the anomaly checks (is capacity monotonic in the number of hosts?) and the recommendation
(the smallest configuration that meets the goal) walk the matrix this way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from caplab.report.model.types import CapacityEntry, CellResult, Factors, Json, Measured
from caplab.units import cell_label, is_number


@dataclass(frozen=True)
class Run:
    factor: str
    group: Factors
    """The other factors, held fixed along the run."""
    entries: list[CapacityEntry]
    """Capacity entries (results["capacity"]) in ascending order of the factor."""

    @property
    def where(self) -> str:
        return f" ({cell_label(self.group)})" if self.group else ""

    def values(self) -> list[float]:
        return [float(e["value"] or 0.0) for e in self.entries]

    def levels(self) -> list[Json]:
        return [e["factors"][self.factor] for e in self.entries]


def numeric_factors(cells: Sequence[CellResult]) -> list[str]:
    names = list(dict.fromkeys(k for c in cells for k in c["factors"]))
    return [n for n in names if all(is_number(c["factors"].get(n)) for c in cells)]


def runs(results: Measured, min_length: int = 2) -> list[Run]:
    """For each numeric factor, the runs of cells with a figure that differ only in it."""
    entries = [e for e in results["capacity"] if is_number(e["value"])]
    out = []
    for factor in numeric_factors(results["cells"]):
        groups: dict[tuple[tuple[str, str], ...], list[CapacityEntry]] = defaultdict(list)
        for e in entries:
            key = tuple((k, repr(v)) for k, v in e["factors"].items() if k != factor)
            groups[key].append(e)
        for members in groups.values():
            if len({e["factors"][factor] for e in members}) >= min_length:
                ordered = sorted(members, key=lambda e: _figure(e["factors"][factor]))
                group = {k: v for k, v in ordered[0]["factors"].items() if k != factor}
                out.append(Run(factor, group, ordered))
    return out


def size_order(cell_factors: Mapping[str, Json], position: int) -> tuple[float, ...]:
    """Smallest configuration first: numeric factors ascending (in the study's factor order),
    then the matrix position for anything else."""
    return (*(float(v) for v in cell_factors.values() if is_number(v)), position)


def _figure(value: Json) -> float:
    """A numeric factor's level (``numeric_factors`` checked that it is one)."""
    return float(value) if is_number(value) else 0.0
