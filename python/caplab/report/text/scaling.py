"""Scaling observations: the law the data supports, its parameters with their intervals, the peak,
the extrapolation — and, when no law is a model of the points, the points, their peak and why no
law fits, with nothing extrapolated, so nobody sizes from a curve the points do not follow."""

from __future__ import annotations

from caplab import units as u
from caplab.analysis.scaling import means_by_n
from caplab.report.model.types import Fit, Measured, Observation, ScalingEntry

MODEL_NAMES = {
    "linear": "linear (no contention)",
    "amdahl": "Amdahl (contention σ, no coherency cost)",
    "usl": "Universal Scalability Law",
}


def _ci(fit: Fit, name: str) -> str:
    low, high = (fit.get("ci") or {}).get(name, [None, None])
    return f" [{u.num(low)}, {u.num(high)}]" if low is not None and high is not None else ""


def _sentence(entry: ScalingEntry, fit: Fit) -> str:
    what = "Capacity" if entry["metric"] == "capacity_rps" else "Throughput"
    where = f" ({entry['group_label']})" if entry.get("group_label") else ""
    params = f"λ = {u.rate(fit['lambda'])} per unit{_ci(fit, 'lambda')}"
    if fit["model"] != "linear":
        params += f", σ = {u.num(fit['sigma'])}{_ci(fit, 'sigma')}"
    if fit["model"] == "usl":
        params += f", κ = {u.num(fit['kappa'])}{_ci(fit, 'kappa')}"
    holdout = (
        f", held-out error {u.pct(fit['holdout_error'])}" if u.is_number(fit.get("holdout_error")) else ""
    )
    text = (
        f"{what} against {entry['factor']}{where}, {fit['points']} points at {fit['distinct_n']} values: the "
        f"{MODEL_NAMES.get(fit['model'], fit['model'])} model fits best by AICc — {params}; "
        f"R² = {u.num(fit['r2'])}{holdout}."
    )
    aicc = fit.get("aicc") or {}
    if fit["model"] == "linear" and any(aicc.get(m) is None for m in ("amdahl", "usl")):
        text += (
            " With this few points only the linear model can be judged (σ and κ need more distinct values)."
        )
    if u.is_number(fit.get("peak_n")):
        text += (
            f" Throughput peaks at {entry['factor']} ≈ {u.num(fit['peak_n'])} "
            f"({u.rate(fit['peak_throughput'])}) and falls beyond it."
        )
    return text


def _extrapolation(entry: ScalingEntry, fit: Fit) -> str:
    measured = max(p["n"] for p in entry["points"])
    beyond = [p for p in fit.get("predictions") or [] if p["n"] > measured]
    if not beyond:
        return ""
    p = max(beyond, key=lambda x: x["n"])
    return (
        f" Extrapolated to {entry['factor']} = {p['n']:g}: {u.rate(p['throughput'])} "
        f"(95% interval {u.interval(p['low'], p['high'], 'req/s')}) — untested."
    )


def _no_model(entry: ScalingEntry) -> str:
    """The points and their peak, and why no law is a model of them: nothing is extrapolated."""
    what = "Capacity" if entry["metric"] == "capacity_rps" else "Throughput"
    where = f" ({entry['group_label']})" if entry.get("group_label") else ""
    measured = ", ".join(f"{u.rate(x)} at {n:g}" for n, x in means_by_n(entry["points"]))
    text = f"{what} against {entry['factor']}{where} — {measured}: {entry.get('note', 'no model fits')}."
    peak = entry.get("peak")
    if peak:
        text += f" The measured peak is {u.rate(peak['throughput'])} at {entry['factor']} = {peak['n']:g}"
    return text + "; nothing is extrapolated beyond the points measured."


def scaling_observations(results: Measured) -> list[Observation]:
    out: list[Observation] = []
    for entry in results["scaling"]:
        cells = list(entry["cells"])
        fit = entry.get("fit")
        if not fit and entry.get("candidate"):
            out.append({"topic": "scaling", "severity": "warning", "text": _no_model(entry), "cells": cells})
            continue
        if not fit:
            out.append(
                {
                    "topic": "scaling",
                    "severity": "info",
                    "text": f"No scaling fit over {entry['factor']}: {entry.get('note', 'too few points')}.",
                    "cells": cells,
                }
            )
            continue
        # A fit is kept only when it is a model of the points (analysis/scaling.py): it may be
        # extrapolated.
        text = _sentence(entry, fit) + _extrapolation(entry, fit)
        out.append({"topic": "scaling", "severity": "info", "text": text, "cells": cells})
    return out
