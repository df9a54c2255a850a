"""The study read across its cells: the matrix of factors, the figure each configuration is rated
by, and the scaling fits along each numeric factor."""

from __future__ import annotations

from typing import cast

import numpy as np

from caplab.analysis.replicates import overlap
from caplab.analysis.scaling import study_scaling
from caplab.analysis.usl import usl
from caplab.report.model.spec_defaults import DEFAULT_HEADROOM
from caplab.report.model.types import (
    Basis,
    CapacityEntry,
    CellResult,
    Fit,
    Goal,
    Interval,
    Json,
    Matrix,
    Point,
    ScalingEntry,
    Unit,
)
from caplab.store.document import StudyDocument
from caplab.units import cell_label, is_number

CURVE_POINTS = 60
"""Samples of a fitted law, for its chart."""


def matrix(cells: list[CellResult], naming: list[str]) -> Matrix:
    factors: dict[str, list[Json]] = {}
    for c in cells:
        for k, v in c["factors"].items():
            if v not in factors.setdefault(k, []):
                factors[k].append(v)
    statuses: dict[str, int] = {}
    for c in cells:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    return {"factors": factors, "naming": naming, "cells": len(cells), "by_status": statuses}


def rating_unit(unit: Unit, goal: Goal | None) -> Unit:
    """What a configuration is rated in: the users a closed model's search found, unless the goal
    is a rate (then the throughput at them); otherwise its capacity's own unit."""
    if unit == "users" and goal is not None and goal.get("unit") != "users":
        return "req/s"
    return unit


def capacity_entries(cells: list[CellResult], goal: Goal | None) -> list[CapacityEntry]:
    """Per cell, the figure a configuration is rated by: its capacity when searched, else its measured
    throughput (a lower bound: the load offered, not the most it can take), with its interval over
    the replicates when it ran as several."""
    headroom = goal["headroom"] if goal else DEFAULT_HEADROOM
    out: list[CapacityEntry] = []
    for c in cells:
        m = c["metrics"]
        cap = m["capacity"]
        value: float | None
        unit: Unit
        basis: Basis
        if cap is not None:
            value, unit, basis = cap["value"], cap["unit"], "capacity"
        elif c["status"] == "complete" and is_number(m["throughput"]):
            value, unit, basis = m["throughput"], "req/s", "throughput"
        else:
            continue
        rate = value if unit == "req/s" else m["throughput"]
        rated_unit = rating_unit(unit, goal)
        base = value if rated_unit == "users" else rate
        # A fixed load run as replicates: its throughput's interval over them.
        replicated = m["replicated"] if cap is None else None
        none: Interval = [None, None]
        ci95 = cap["ci95"] if cap else replicated["throughput"]["ci95"] if replicated else none
        out.append(
            {
                "cell": c["index"],
                "label": c["label"],
                "factors": c["factors"],
                "basis": basis,
                "value": value,
                "unit": unit,
                "ci95": ci95,
                "interval": cap["interval"] if cap else "replicates" if replicated else None,
                "replicates": cap["replicates"] if cap else replicated["replicates"] if replicated else 1,
                "indistinguishable": [],
                "found": cap["found"] if cap else value is not None,
                "message": cap["message"] if cap else None,
                "trials": cap["trial_count"] if cap else m["trials"],
                "search_s": cap["search_s"] if cap else None,
                "consistency": m["consistency"],
                "limit": c["limit"]["resource"] if c["limit"] else None,
                "headroom": headroom,
                "rate": rate,
                "rated": base * (1.0 - headroom) if is_number(base) else None,
                "rated_unit": rated_unit,
            }
        )
    _mark_indistinguishable(out)
    return out


def _mark_indistinguishable(entries: list[CapacityEntry]) -> None:
    """Pairs of configurations whose replicate intervals overlap: their difference is within the
    run-to-run noise, so the report must not rank one above the other."""
    replicated = [e for e in entries if e["interval"] == "replicates" and None not in e["ci95"]]
    for a in replicated:
        for b in replicated:
            if a is not b and a["unit"] == b["unit"] and overlap(_pair(a["ci95"]), _pair(b["ci95"])):
                a["indistinguishable"].append(b["cell"])


def _pair(interval: Interval) -> tuple[float, float]:
    low, high = interval
    assert low is not None and high is not None
    return low, high


def _curve(fit: Fit, points: list[Point]) -> list[Point]:
    """The fitted law sampled from N = 1 (or the smallest N) to the extrapolation, for the chart."""
    preds = [p["n"] for p in fit.get("predictions") or []]
    top = max([*preds, *(p["n"] for p in points)])
    low = min(1.0, *(p["n"] for p in points))
    grid = np.linspace(low, top, CURVE_POINTS)
    ys = usl(grid, fit["lambda"], fit["sigma"], fit["kappa"])
    return [{"n": round(float(n), 4), "throughput": float(y)} for n, y in zip(grid, ys, strict=True)]


def scaling_entries(document: StudyDocument, labels: dict[int, str]) -> list[ScalingEntry]:
    """The scaling fits of the study's complete cells, each with its cells' labels and its curve."""
    out: list[ScalingEntry] = []
    for found in study_scaling(document.to_json()):
        fit = cast(Fit | None, found.get("fit"))
        entry: ScalingEntry = {
            **cast(ScalingEntry, found),
            "labels": [labels.get(i, str(i)) for i in found["cells"]],
            "group_label": cell_label(found["group"]) if found["group"] else "",
            "curve": _curve(fit, found["points"]) if fit else [],
        }
        out.append(entry)
    return out
