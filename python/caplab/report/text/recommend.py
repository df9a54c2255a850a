"""The recommendation: what to buy. With a goal, the smallest tested configuration whose capacity,
less the headroom, carries the goal's rate, with the margin stated; without one, what each
configuration can be rated for. Advice that follows from the limits comes after.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from caplab import units as u
from caplab.analysis.scaling import fit_quality
from caplab.analysis.usl import usl
from caplab.report.model.runs import size_order
from caplab.report.model.scenario import DEFAULT_HEADROOM
from caplab.report.text.observations import SATURATED
from caplab.units import cell_label

GOAL_HINT = "add `goal: {rate: R, headroom: 25%}` to the study file"


def _ratings(results: dict[str, Any], headroom: float) -> list[dict[str, Any]]:
    """The configurations with a figure, smallest first, each with the load it can be rated for."""
    position = {c["index"]: i for i, c in enumerate(results["cells"])}
    entries = [e for e in results["capacity"] if u.is_number(e["value"]) and u.is_number(e["rate"])]
    entries.sort(key=lambda e: size_order(e["factors"], position.get(e["cell"], 0)))
    return [
        {
            "cell": e["cell"],
            "label": e["label"],
            "factors": e["factors"],
            "basis": e["basis"],
            "value": e["value"],
            "unit": e["unit"],
            "rate": e["rate"],
            "ci95": e["ci95"] if e["unit"] == "req/s" else [None, None],
            "rated": e["rate"] * (1.0 - headroom),
        }
        for e in entries
    ]


def sustained(r: dict[str, Any]) -> str:
    """What a configuration sustained, in its unit (and as a rate when that is users)."""
    shown = u.load(r["value"], r["unit"])
    return shown if r["unit"] == "req/s" else f"{shown} ({u.rate(r['rate'])})"


def _extrapolate(results: dict[str, Any], needed: float, workload: dict[str, Any]) -> dict[str, Any] | None:
    """The smallest untested size a good scaling fit (of this workload's cells) predicts would
    reach ``needed``."""
    for entry in results["scaling"]:
        if any(entry["group"].get(k) != v for k, v in workload.items()):
            continue
        fit = entry.get("fit")
        if not fit or not fit_quality(entry)[0]:
            continue
        top = max(p["n"] for p in entry["points"])
        limit = fit["peak_n"] if u.is_number(fit.get("peak_n")) else 4 * top
        n = math.floor(top) + 1
        while n <= limit:
            x = float(usl(np.array([float(n)]), fit["lambda"], fit["sigma"], fit["kappa"])[0])
            if x >= needed:
                return {
                    "factor": entry["factor"],
                    "group": entry["group"],
                    "n": n,
                    "predicted": x,
                    "model": fit["model"],
                }
            n += 1
    return None


def _with_goal(
    ratings: list[dict[str, Any]], goal: dict[str, Any], results: dict[str, Any], workload: dict[str, Any]
) -> dict[str, Any]:
    rate, headroom = goal["rate"], goal["headroom"]
    needed = rate / (1.0 - headroom)
    chosen = next((r for r in ratings if r["rated"] >= rate), None)
    out: dict[str, Any] = {"needed": needed, "choice": None, "extrapolated": None}
    if chosen is not None:
        margin = chosen["rated"] - rate
        out["choice"] = {**chosen, "margin": margin, "margin_fraction": margin / rate}
        text = (
            f"Choose {chosen['label']}: it sustained {sustained(chosen)}; rated with "
            f"{u.pct(headroom)} headroom for {u.rate(chosen['rated'])}, it carries the "
            f"{u.rate(rate)} goal with "
            f"{u.rate(margin)} ({u.pct(margin / rate)}) to spare."
        )
        low = chosen["ci95"][0] if chosen["ci95"] else None
        if u.is_number(low) and low * (1.0 - headroom) < rate:
            text += (
                f" The low end of its 95% interval ({u.rate(low)}) would not: confirm with longer "
                "trials, or take "
                "the next size up."
            )
        if ratings and chosen is not ratings[0]:
            smaller = ratings[ratings.index(chosen) - 1]
            text += f" The next smaller, {smaller['label']}, is rated for only {u.rate(smaller['rated'])}."
        out["text"] = text
        return out
    best = max(ratings, key=lambda r: r["rate"])
    text = (
        f"No tested configuration meets {u.rate(rate)} with {u.pct(headroom)} headroom (that needs "
        "a capacity of "
        f"{u.rate(needed)}); the best, {best['label']}, sustained "
        f"{sustained(best)} and is "
        f"rated for {u.rate(best['rated'])}."
    )
    guess = _extrapolate(results, needed, workload)
    if guess is not None:
        out["extrapolated"] = guess
        text += (
            f" The {guess['model']} fit predicts {guess['factor']} = {guess['n']} would reach "
            f"{u.rate(guess['predicted'])} — untested: measure it before buying."
        )
    out["text"] = text
    return out


def _without_goal(ratings: list[dict[str, Any]], headroom: float) -> str:
    best = max(ratings, key=lambda r: r["rate"])
    smallest = ratings[0]
    text = (
        f"No goal was given ({GOAL_HINT} to size for a load). The best configuration, {best['label']}, "
        f"sustained {sustained(best)}: with {u.pct(headroom)} headroom, rate it for "
        f"{u.rate(best['rated'])}."
    )
    if smallest is not best:
        text += (
            f" The smallest, {smallest['label']}, is rated for {u.rate(smallest['rated'])}; "
            "the table below rates each configuration."
        )
    return text


def _limit_advice(cells: list[dict[str, Any]], results: dict[str, Any]) -> list[str]:
    """One piece of advice per kind of limit met, naming the cells it applies to."""
    by_advice: dict[str, list[str]] = {}
    for c in cells:
        limit = c["limit"] or {}
        resource, kind = str(limit.get("resource")), limit.get("kind")
        host_util = (c["resources"].get("host") or {}).get("cpu_util_percent")
        host_busy = u.is_number(host_util) and host_util >= 100 * SATURATED
        if kind == "hardware" and (resource == "cpu:host" or (resource.startswith("cpu:") and host_busy)):
            advice = (
                "The host's CPU is the ceiling: more cores (a larger host, or separate hosts per "
                "tier and for "
                "the generator) raise it; more processes on the same host do not."
            )
        elif kind == "hardware" and resource.startswith("cpu:") and "thread" in str(limit.get("summary")):
            role = resource.removeprefix("cpu:")
            spare = u.is_number(host_util) and host_util < 70
            advice = f"{role} is bound by one busy thread: faster cores raise one process's ceiling" + (
                f"; the host had idle cores, so run more {role} processes or threads." if spare else "."
            )
        elif kind == "hardware" and resource.startswith("cpu:"):
            advice = f"{resource.removeprefix('cpu:')} is CPU-bound: more or faster cores raise its ceiling."
        elif kind == "hardware" and resource.startswith("disk:"):
            advice = (
                f"{resource.removeprefix('disk:')} is the limit: faster storage (SSD/NVMe), or the "
                "busiest files "
                "(the log) on a disk of their own, as the Connexion tests found."
            )
        elif kind == "hardware" and resource.startswith("net:"):
            link = resource.removeprefix("net:")
            advice = f"The network ({link}) is the limit: a faster link or fewer round trips."
        elif kind == "software":
            advice = (
                "No hardware saturates at capacity: look at pools, locks, serialisation and round "
                "trips before "
                "buying hardware — more of it will not help."
            )
        else:
            continue
        by_advice.setdefault(advice, []).append(c["label"])
    return [f"{advice} ({', '.join(labels)})" for advice, labels in by_advice.items()]


def advice(results: dict[str, Any]) -> list[str]:
    """What follows from the limits, the generator and the fits, beyond the choice of size."""
    complete = [c for c in results["cells"] if c["status"] == "complete"]
    out = _limit_advice(complete, results)
    if any(o["topic"] == "generator" and o["severity"] == "warning" for o in results["observations"]):
        out.append("Run the load generator on another machine so that it does not take CPU from the SUT.")
    for entry in results["scaling"]:
        if entry.get("fit") and not fit_quality(entry)[0]:
            out.append(
                f"Before extrapolating over {entry['factor']}, test more values of it (four or "
                "more, past the "
                "point where the limit moves)."
            )
    if any(c["status"] != "complete" for c in results["cells"]):
        out.append("Re-run the cells that did not complete (`caplab run STUDY --resume`) before deciding.")
    return out


def _per_workload(
    ratings: list[dict[str, Any]], goal: dict[str, Any], results: dict[str, Any]
) -> dict[str, Any]:
    """The goal met for each workload (``goal.for_each``): configurations are compared only with
    others serving the same workload, and named without it. Without ``for_each``, one choice."""
    for_each = goal.get("for_each") or []
    if not for_each:
        out = _with_goal(ratings, goal, results, {})
        out["choices"] = [out["choice"]] if out["choice"] else []
        return out
    naming = [n for n in results["matrix"]["naming"] if n not in for_each]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in ratings:
        workload = {k: r["factors"].get(k) for k in for_each}
        short = cell_label({k: v for k, v in r["factors"].items() if k in naming}) or r["label"]
        groups.setdefault(cell_label(workload), []).append({**r, "label": short, "for": workload})
    workloads = []
    for name, members in groups.items():
        part = _with_goal(members, goal, results, members[0]["for"])
        workloads.append(
            {
                "for": members[0]["for"],
                **part,
                "text": f"For {name}: {part['text'][:1].lower()}{part['text'][1:]}",
            }
        )
    return {
        "needed": workloads[0]["needed"] if workloads else None,
        "choice": None,
        "choices": [w["choice"] for w in workloads if w["choice"]],
        "extrapolated": None,
        "workloads": workloads,
        "text": " ".join(w["text"] for w in workloads),
    }


def recommend(results: dict[str, Any]) -> dict[str, Any]:
    goal = results["goal"]
    headroom = goal["headroom"] if goal else DEFAULT_HEADROOM
    ratings = _ratings(results, headroom)
    out: dict[str, Any] = {
        "goal": goal,
        "headroom": headroom,
        "ratings": ratings,
        "choice": None,
        "choices": [],
        "advice": advice(results),
    }
    if not ratings:
        out["basis"] = None
        out["text"] = (
            "No configuration completed with a figure to size from: see the cells below."
            if results["cells"]
            else "The study has no cells yet: there is nothing to size from."
        )
        return out
    basis = "capacity" if any(r["basis"] == "capacity" for r in ratings) else "throughput"
    out["basis"] = basis
    prefix = (
        ""
        if basis == "capacity"
        else "No cell was searched: the figures are the throughput measured at the offered load — a "
        "configuration carried at least that much, perhaps more. "
    )
    if goal:
        out.update(_per_workload(ratings, goal, results))
        out["text"] = prefix + out["text"]
    else:
        out["text"] = prefix + _without_goal(ratings, headroom)
    return out
