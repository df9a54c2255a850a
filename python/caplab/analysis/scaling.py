"""Scaling fits over a study: for each numeric factor with enough distinct values, a USL fit of
throughput (or capacity, when cells were searched) against it, one fit per combination of the
other factors. Derived from the stored cells, so `show` and `run` give the same answer."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from caplab.analysis.usl import UslFit, fit_usl
from caplab.units import is_number, num

MIN_DISTINCT = 3
GOOD_R2 = 0.80
GOOD_HOLDOUT = 0.20
"""A fit is sized from only with R² at least this and, when a point was held out, its prediction
within this fraction of the measurement."""


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
    # A job's cells have no throughput to scale: its rate against its size is a shape, fitted
    # apart (size_fit.py), not a scalability law. Nor has a failover's: its throughput holds the
    # outages it measured (longer with a longer ttl), not what more of a resource carries.
    cells = [
        c
        for c in document.get("cells", [])
        if c.get("status") == "complete"
        and "job" not in (c.get("metrics") or {})
        and not (c.get("metrics") or {}).get("failover")
    ]
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
            if len({c["factors"][factor] for c in members}) < 2:
                continue  # the factor does not vary here (it moves with another: a zip:) — no series
            fits.append(_series(factor, dict(key), members))
    return fits


def _series(factor: str, group: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    """One series: the cells of ``group`` (the other factors held) over ``factor``'s values, their
    points, the peak among them and the scalability law fitted to them (or why there is none)."""
    n: list[float] = []
    x: list[float] = []
    metric = "throughput"
    for c in members:
        metric, points = _point_values(c)
        n += [float(c["factors"][factor])] * len(points)
        x += points
    entry: dict[str, Any] = {
        "factor": factor,
        "group": group,
        "metric": metric,
        "cells": [c["index"] for c in members],
        "points": [{"n": a, "throughput": b} for a, b in zip(n, x, strict=True)],
    }
    if x:
        peak_n, peak = max(means_by_n(entry["points"]), key=lambda point: point[1])
        entry["peak"] = {"n": peak_n, "throughput": peak}
    try:
        fit = fit_usl(n, x, extrapolate_to=2 * max(n))
    except ValueError as e:
        entry["fit"] = None
        entry["note"] = str(e)
    else:
        entry.update(model_or_none(entry, fit))
    return entry


def model_or_none(entry: dict[str, Any], fit: UslFit) -> dict[str, Any]:
    """The keys that say whether ``fit`` is a model of the entry's points. One that is not is no
    fit at all: ``fit`` is null and ``note`` says why (its R² or held-out error, the points' shape),
    and the rejected law is kept as ``candidate`` without its predictions — so neither the report,
    nor the terminal, nor results.json has anything to extrapolate from."""
    usable, reason = fit_quality({**entry, "fit": fit.to_dict()})
    if usable:
        return {"fit": fit.to_dict()}
    candidate = {k: v for k, v in fit.to_dict().items() if k != "predictions"}
    return {"fit": None, "note": f"no model fits — {reason}", "candidate": candidate}


def means_by_n(points: Iterable[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """(N, mean throughput at N), ascending in N: repeated trials at one N count once."""
    by_n: dict[float, list[float]] = {}
    for p in points:
        by_n.setdefault(float(p["n"]), []).append(float(p["throughput"]))
    return [(n, sum(v) / len(v)) for n, v in sorted(by_n.items())]


def fit_quality(entry: dict[str, Any]) -> tuple[bool, str]:
    """Whether a fit can be sized from, and if not, the reason in words."""
    fit = entry.get("fit")
    if not fit:
        return False, entry.get("note") or "no fit"
    ordered = means_by_n(entry["points"])
    (n0, first), (n1, last) = ordered[0], ordered[-1]
    peak_n, peak = max(ordered, key=lambda point: point[1])
    factor = entry["factor"]
    reasons = []
    if peak_n == n0 and last < first:
        reasons.append(
            f"throughput falls as {factor} grows ({first:,.0f}/s at {n0:g} → {last:,.0f}/s at "
            f"{n1:g}): each unit added costs more of a shared resource than it brings (see the "
            f"limits), or {factor} is not an amount of resource at all; no scalability law fits that"
        )
    elif peak_n < n1 and last < peak * 0.98:
        reasons.append(
            f"throughput peaks at {factor} = {peak_n:g} ({peak:,.0f}/s) and falls to {last:,.0f}/s at "
            f"{n1:g} — the units compete for a shared resource (see the limits), and a curve fitted "
            "to so few points cannot place that peak"
        )
    elif len(ordered) >= 3 and last <= ordered[-2][1] * 1.02:
        # Where the plateau starts: the first N already within 2 % of the best.
        start = next(n for n, x in ordered if x >= peak * 0.98)
        reasons.append(
            f"throughput stops growing at {factor} = {start:g} — a shared resource "
            "saturates (see the limits), which no fitted curve predicts from so few points"
        )
    r2 = fit.get("r2")
    holdout = fit.get("holdout_error")
    figures = []
    if is_number(r2) and r2 < GOOD_R2:
        figures.append(
            f"the best law tried ({fit.get('model')}) has R² {num(r2)}, under the {GOOD_R2:g} a model needs"
        )
    if is_number(holdout) and abs(holdout) > GOOD_HOLDOUT:
        figures.append(
            f"held out, the largest {factor} is predicted {abs(holdout):.0%} off "
            f"(more than {GOOD_HOLDOUT:.0%})"
        )
    if figures and not reasons:
        reasons.append("the measured points scatter about the curve")
    reasons += figures
    return not figures and not reasons, "; ".join(reasons)


@dataclass(frozen=True)
class FitJudgement:
    """Whether a fit is a model of the points (and may be extrapolated), and if not why; the
    measured peak either way, which is what the points say without any model."""

    usable: bool
    reason: str
    peak_n: float
    peak_throughput: float


def judge_fit(n: list[float], x: list[float], fit: UslFit, factor: str = "N") -> FitJudgement:
    """`fit_quality` for bare points, as `caplab fit-usl` reads them from a file."""
    points = [{"n": a, "throughput": b} for a, b in zip(n, x, strict=True)]
    usable, reason = fit_quality({"factor": factor, "points": points, "fit": fit.to_dict()})
    peak_n, peak = max(means_by_n(points), key=lambda point: point[1])
    return FitJudgement(usable, reason, peak_n, peak)
