"""A seed paper's capacity table beside ours: the study's ``paper:`` block names a factor and, per
value of it, the paper's throughput and what limited it; each row puts our capacity for that value
and the limit our analysis named beside them. The paper's numbers are its hardware's: the rows
compare which resource limits and how the configurations rank, not the values."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from caplab.analysis.limit_kind import LimitKind
from caplab.json_types import JsonObject
from caplab.report.model.types import CellResult, PaperCapacityRow, PaperComparison
from caplab.units import is_number

PAPER_WORDS = {
    LimitKind.STORAGE: "disk",
    LimitKind.HOST_CPU: "cpu",
    LimitKind.CPU: "cpu",
    LimitKind.CPU_THREAD: "cpu",
    LimitKind.MEMORY: "memory",
    LimitKind.NETWORK_BANDWIDTH: "network",
    LimitKind.NETWORK_ROUND_TRIPS: "network",
}
"""The words a seed paper names its limits by, for the kinds of ours it would call so."""


def limit_kind(resource: str | None, kind: str | None) -> str | None:
    """Our limit in the paper's words (disk, cpu, memory, network), else its kind. A fixed load's
    busiest resource is worded too: the paper's table names what bounded each configuration."""
    ours = LimitKind.of_resource(resource)
    return PAPER_WORDS.get(ours, kind) if ours is not None else kind


def paper_comparison(spec: JsonObject, cells: list[CellResult]) -> PaperComparison | None:
    """The comparison, or None when the study's paper block has no ``capacity:`` table. The
    block's tables are keyed as written (a number stays one), so they are read as such."""
    paper = spec.get("paper")
    if not isinstance(paper, Mapping) or not isinstance(paper.get("capacity"), Mapping):
        return None
    figures: Mapping[object, object] = paper["capacity"]
    found_limits = paper.get("limit")
    limits: Mapping[object, object] = found_limits if isinstance(found_limits, Mapping) else {}
    factor = str(paper.get("factor") or _factor_of(figures, cells) or "")
    rows: list[PaperCapacityRow] = []
    for value, figure in figures.items():
        mine = [c for c in cells if factor and str(c["factors"].get(factor)) == str(value)]
        # A consolidation study's paper sized its combined servers: ours beside them is together's
        # (the single-role servers apart carry other users, and a mean of both would be neither).
        combined = [c for c in mine if c["factors"].get("placement") == "together"]
        mine = combined or mine
        found = [cap for c in mine if (cap := c["metrics"]["capacity"]) is not None and cap["found"]]
        rates = [float(cap["value"]) for cap in found if is_number(cap["value"])]
        limit = next((c["limit"] for c in mine if c["limit"] is not None), None)
        resource = limit["resource"] if limit else None
        rows.append(
            {
                "value": str(value),
                "paper": float(figure) if is_number(figure) else None,
                "paper_limit": str(limits[value]) if value in limits else None,
                "cells": [c["index"] for c in mine],
                "ours": statistics.fmean(rates) if rates else None,
                "ours_limit": resource,
                "ours_kind": limit_kind(resource, limit["kind"] if limit else None),
                "ours_consistency": next((c["metrics"]["consistency"] for c in mine), None),
                "paper_cpu_percent": _figure(paper.get("cpu_percent"), value),
                "paper_rate": _figure(paper.get("messages_per_s"), value),
            }
        )
    said = paper.get("recommendation")
    return {
        "source": str(paper.get("source") or "the seed paper"),
        "factor": factor,
        "rows": rows,
        "recommendation": str(said) if said else None,
    }


def _figure(table: object, value: object) -> float | None:
    """The paper's figure for ``value`` in one of its optional per-configuration tables."""
    figure = table.get(value) if isinstance(table, Mapping) else None
    return float(figure) if is_number(figure) else None


def _factor_of(figures: Mapping[object, object], cells: list[CellResult]) -> str | None:
    """The factor whose values the paper's keys are, when the block does not name it."""
    names = {name for c in cells for name in c["factors"]}
    for name in sorted(names):
        values = {str(c["factors"].get(name)) for c in cells}
        if set(map(str, figures)) & values:
            return name
    return None
