"""Scaling observations: the law the data supports, its parameters with their intervals, the peak,
the extrapolation — and, when the fit is poor, that it is poor and why, so nobody sizes from it."""

from __future__ import annotations

from typing import Any

from caplab.report import format as f

GOOD_R2 = 0.80
GOOD_HOLDOUT = 0.20
MODEL_NAMES = {
    "linear": "linear (no contention)",
    "amdahl": "Amdahl (contention σ, no coherency cost)",
    "usl": "Universal Scalability Law",
}


def _ci(fit: dict[str, Any], name: str) -> str:
    low, high = (fit.get("ci") or {}).get(name, [None, None])
    return f" [{f.num(low)}, {f.num(high)}]" if low is not None and high is not None else ""


def means_by_n(points: list[dict[str, Any]]) -> list[tuple[float, float]]:
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
    reasons = []
    if last < first:
        reasons.append(
            f"throughput falls as {entry['factor']} grows ({f.num(first)}/s at {n0:g} → {f.num(last)}/s at "
            f"{n1:g}), so {entry['factor']} is not an amount of resource and a scalability law does "
            "not fit it"
        )
    elif len(ordered) >= 3 and last <= ordered[-2][1] * 1.02:
        reasons.append(
            f"throughput stops growing at {entry['factor']} = {ordered[-2][0]:g} — a shared resource "
            "saturates (see the limits), which no fitted curve predicts from so few points"
        )
    r2 = fit.get("r2")
    holdout = fit.get("holdout_error")
    poor = (f.is_number(r2) and r2 < GOOD_R2) or (f.is_number(holdout) and abs(holdout) > GOOD_HOLDOUT)
    if poor and not reasons:
        reasons.append("the measured points scatter about the curve")
    return not poor and not reasons, "; ".join(reasons)


def _sentence(entry: dict[str, Any]) -> str:
    fit = entry["fit"]
    what = "Capacity" if entry["metric"] == "capacity_rps" else "Throughput"
    where = f" ({entry['group_label']})" if entry.get("group_label") else ""
    params = f"λ = {f.rate(fit['lambda'])} per unit{_ci(fit, 'lambda')}"
    if fit["model"] != "linear":
        params += f", σ = {f.num(fit['sigma'])}{_ci(fit, 'sigma')}"
    if fit["model"] == "usl":
        params += f", κ = {f.num(fit['kappa'])}{_ci(fit, 'kappa')}"
    holdout = (
        f", held-out error {f.pct(fit['holdout_error'])}" if f.is_number(fit.get("holdout_error")) else ""
    )
    text = (
        f"{what} against {entry['factor']}{where}, {fit['points']} points at {fit['distinct_n']} values: the "
        f"{MODEL_NAMES.get(fit['model'], fit['model'])} model fits best by AICc — {params}; "
        f"R² = {f.num(fit['r2'])}{holdout}."
    )
    aicc = fit.get("aicc") or {}
    if fit["model"] == "linear" and any(aicc.get(m) is None for m in ("amdahl", "usl")):
        text += (
            " With this few points only the linear model can be judged (σ and κ need more distinct values)."
        )
    if f.is_number(fit.get("peak_n")):
        text += (
            f" Throughput peaks at {entry['factor']} ≈ {f.num(fit['peak_n'])} "
            f"({f.rate(fit['peak_throughput'])}) and falls beyond it."
        )
    return text


def _extrapolation(entry: dict[str, Any]) -> str:
    fit = entry["fit"]
    measured = max(p["n"] for p in entry["points"])
    beyond = [p for p in fit.get("predictions") or [] if p["n"] > measured]
    if not beyond:
        return ""
    p = max(beyond, key=lambda x: x["n"])
    return (
        f" Extrapolated to {entry['factor']} = {p['n']:g}: {f.rate(p['throughput'])} "
        f"(95% interval {f.interval(p['low'], p['high'], 'req/s')}) — untested."
    )


def scaling_observations(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for entry in results["scaling"]:
        cells = list(entry["cells"])
        if not entry.get("fit"):
            out.append(
                {
                    "topic": "scaling",
                    "severity": "info",
                    "text": f"No scaling fit over {entry['factor']}: {entry.get('note', 'too few points')}.",
                    "cells": cells,
                }
            )
            continue
        good, why = fit_quality(entry)
        text = _sentence(entry)
        if good:
            text += _extrapolation(entry)
        else:
            text += f" The fit is poor: {why}. Do not size from its extrapolation."
        out.append(
            {"topic": "scaling", "severity": "info" if good else "warning", "text": text, "cells": cells}
        )
    return out
