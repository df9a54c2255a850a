"""Scaling fits over a study: for each numeric factor with enough distinct values, a USL fit of
throughput (or capacity, when cells were searched) against it, one fit per combination of the
other factors. Derived from the stored cells, so `show` and `run` give the same answer."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from caplab.analysis.usl import fit_usl

MIN_DISTINCT = 3


def _point_values(cell: dict[str, Any]) -> tuple[str, list[float]]:
    """The cell's measured throughputs: its capacity if searched, else each trial's throughput."""
    metrics = cell.get("metrics") or {}
    capacity = (metrics.get("capacity") or {}).get("capacity_rps")
    if capacity is not None:
        return "capacity_rps", [float(capacity)]
    trials = [
        t["throughput"] for t in cell.get("trials") or [] if (t.get("trial") or {}).get("kind") == "fixed"
    ]
    return "throughput", [float(x) for x in trials] or (
        [float(metrics["throughput"])] if "throughput" in metrics else []
    )


def study_scaling(document: dict[str, Any]) -> list[dict[str, Any]]:
    cells = [c for c in document.get("cells", []) if c.get("status") == "complete"]
    if not cells:
        return []
    names = list(cells[0]["factors"])
    fits = []
    for factor in names:
        values = {c["factors"][factor] for c in cells}
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values)
        if not numeric or len(values) < MIN_DISTINCT:
            continue
        groups: dict[tuple[tuple[str, Any], ...], list[dict[str, Any]]] = defaultdict(list)
        for c in cells:
            key = tuple((k, v) for k, v in c["factors"].items() if k != factor)
            groups[key].append(c)
        for key, members in groups.items():
            n: list[float] = []
            x: list[float] = []
            metric = "throughput"
            for c in members:
                metric, points = _point_values(c)
                n += [float(c["factors"][factor])] * len(points)
                x += points
            entry: dict[str, Any] = {
                "factor": factor,
                "group": dict(key),
                "metric": metric,
                "cells": [c["index"] for c in members],
                "points": [{"n": a, "throughput": b} for a, b in zip(n, x, strict=True)],
            }
            try:
                entry["fit"] = fit_usl(n, x, extrapolate_to=2 * max(n)).to_dict()
            except ValueError as e:
                entry["fit"] = None
                entry["note"] = str(e)
            fits.append(entry)
    return fits
