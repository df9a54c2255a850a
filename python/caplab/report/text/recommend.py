"""The recommendation: what to buy. With a goal, the smallest tested configuration whose capacity,
less the headroom, carries the goal's rate, with the margin stated; without one, what each
configuration can be rated for. Advice that follows from the limits comes after.
"""

from __future__ import annotations

import math
import re
from typing import NotRequired, TypedDict

import numpy as np

from caplab import units as u
from caplab.analysis.limit import NEAR_SATURATION
from caplab.analysis.limit_kind import LimitKind
from caplab.analysis.replicates import overlap
from caplab.analysis.scope import ResourceScope, ScopeKind
from caplab.analysis.usl import usl
from caplab.report.model.runs import size_order
from caplab.report.model.spec_defaults import DEFAULT_HEADROOM
from caplab.report.model.types import (
    Basis,
    CapacityEntry,
    CellResult,
    Choice,
    Extrapolation,
    Factors,
    Goal,
    GoalMet,
    Measured,
    Observation,
    Rating,
    Recommendation,
    RecommendationBody,
    Workload,
)
from caplab.report.model.wear import endurance_rows
from caplab.report.text.costs import cost_summary, endurance_text, priced
from caplab.units import cell_label

GOAL_HINT = "add `goal: {rate: R, headroom: 25%}` to the study file"
FAILOVER_TEXT = (
    "No capacity was searched: this study measured failover (its recovery leads the Summary and is "
    "detailed under Recovery), and the throughput a configuration carried through its outages rates "
    "it for nothing. To size for a load, search its capacity (`search:`) in a study without the actions."
)
JOB_GOAL_HINT = "add `goal: {phase: P, rate: R}` (R in items/s) to the study file to size for a rate"


def _ratings(results: Measured, headroom: float) -> list[Rating]:
    """The configurations with a figure, smallest first, each with the load it can be rated for (a
    job study's: each rated by its phase's items/s)."""
    position = {c["index"]: i for i, c in enumerate(results["cells"])}
    jobs = results["jobs"]
    entries = [
        (e, value, rate)
        for e in results["capacity"] or (jobs["capacity"] if jobs else [])
        if u.is_number(value := e["value"]) and u.is_number(rate := e["rate"])
    ]
    entries.sort(key=lambda x: size_order(x[0]["factors"], position.get(x[0]["cell"], 0)))
    return [
        {
            "cell": e["cell"],
            "label": e["label"],
            "factors": e["factors"],
            "basis": e["basis"],
            "value": value,
            "unit": e["unit"],
            "rate": rate,
            "ci95": e["ci95"] if e["unit"] == e["rated_unit"] else [None, None],
            "interval": e["interval"],
            "rated": (value if e["rated_unit"] == "users" else rate) * (1.0 - headroom),
            "rated_unit": e["rated_unit"],
        }
        for e, value, rate in entries
    ]


def _within_noise(a: Rating, b: Rating) -> bool:
    """Whether two ratings' replicate intervals overlap (one search's bracket says nothing here)."""
    if a["interval"] != "replicates" or b["interval"] != "replicates":
        return False
    (a0, a1), (b0, b1) = a["ci95"], b["ci95"]
    if a0 is None or a1 is None or b0 is None or b1 is None:
        return False
    return overlap((a0, a1), (b0, b1))


def _tied_with(best: Rating, ratings: list[Rating]) -> list[Rating]:
    """``best`` and every configuration within its noise (replicate intervals overlapping), in size
    order: a difference among them is not measured, so none of them is ranked above the others."""
    return [r for r in ratings if r is best or _within_noise(best, r)]


def _listing(ratings: list[Rating]) -> str:
    return ", ".join(f"{r['label']} ({sustained(r)})" for r in ratings)


def rated(r: Rating) -> str:
    """What a configuration is rated for, in its rating's unit: ``1,250 users`` or ``450/s``."""
    return u.load(r["rated"], r["rated_unit"])


def sustained(r: Rating) -> str:
    """What a configuration sustained, in its unit (and as a rate when that is users)."""
    shown = u.load(r["value"], r["unit"])
    return shown if r["unit"] != "users" else f"{shown} ({u.rate(r['rate'])})"


def _cheapest(meeting: list[Rating]) -> Rating | None:
    """Of the configurations that carry the goal (in size order), the lowest priced when the study
    priced them — the one the cost line names as the cheapest that meets the goal — else the
    smallest; equal prices go to the smaller."""
    priced = [r for r in meeting if r.get("cost") is not None]
    if priced:
        return min(priced, key=lambda r: float(r.get("cost") or 0.0))
    return meeting[0] if meeting else None


def _extrapolate(results: Measured, needed: float, workload: Factors) -> Extrapolation | None:
    """The smallest untested size a good scaling fit (of this workload's cells) predicts would
    reach ``needed``."""
    for entry in results["scaling"]:
        if any(entry["group"].get(k) != v for k, v in workload.items()):
            continue
        fit = entry.get("fit")
        if not fit:  # no law is a model of the points: nothing to extrapolate from
            continue
        top = max(p["n"] for p in entry["points"])
        peak = fit.get("peak_n")
        limit = peak if u.is_number(peak) else 4 * top
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


def _with_goal(ratings: list[Rating], goal: Goal, results: Measured, workload: Factors) -> GoalMet:
    rate, headroom = goal["rate"], goal["headroom"]
    unit = goal.get("unit", "req/s")

    def amount(x: float | None) -> str:
        return u.load(x, unit)

    needed = rate / (1.0 - headroom)
    meeting = [r for r in ratings if r["rated"] >= rate]
    chosen = _cheapest(meeting)
    if chosen is not None:
        margin = chosen["rated"] - rate
        choice: Choice = {**chosen, "margin": margin, "margin_fraction": margin / rate}
        text = (
            f"Choose {chosen['label']}: it sustained {sustained(chosen)}; rated with "
            f"{u.pct(headroom)} headroom for {amount(chosen['rated'])}, it carries the "
            f"{amount(rate)} goal with "
            f"{amount(margin)} ({u.pct(margin / rate)}) to spare."
        )
        dearer = [r for r in meeting[: meeting.index(chosen)] if r.get("cost") is not None]
        if dearer:
            text += (
                f" {', '.join(r['label'] for r in dearer)} also "
                f"{'carries' if len(dearer) == 1 else 'carry'} it but "
                f"{'costs' if len(dearer) == 1 else 'cost'} more: the cheapest that meets the goal is chosen."
            )
        low = chosen["ci95"][0] if chosen["ci95"] else None
        if u.is_number(low) and low * (1.0 - headroom) < rate:
            what = (
                "its 95% interval over replicates"
                if chosen["interval"] == "replicates"
                else "its search's bracket (one run; another may land lower)"
            )
            text += (
                f" The low end of {what} ({amount(low)}) would not: confirm with replicates or longer "
                "trials, or take the next size up."
            )
        smaller_ones = [r for r in ratings[: ratings.index(chosen)] if r["rated"] < rate]
        if smaller_ones:
            smaller = smaller_ones[-1]
            text += f" The next smaller, {smaller['label']}, is rated for only {amount(smaller['rated'])}"
            if _within_noise(chosen, smaller):
                text += (
                    ", but the two capacities' intervals overlap: they are not distinguishable here, "
                    "so the choice rests on the goal's margin, not on a measured difference between them."
                )
            else:
                text += "."
        text += _to_avoid(ratings, chosen, rate, results)
        return {"needed": needed, "choice": choice, "extrapolated": None, "text": text}
    best = max(ratings, key=lambda r: r["rated"])
    top = _tied_with(best, ratings)
    text = (
        f"No tested configuration meets {amount(rate)} with {u.pct(headroom)} headroom (that needs "
        "a capacity of "
        f"{amount(needed)}); the best, {best['label']}, sustained "
        f"{sustained(best)} and is "
        f"rated for {amount(best['rated'])}."
        if len(top) == 1
        else f"No tested configuration meets {amount(rate)} with {u.pct(headroom)} headroom (that needs "
        f"a capacity of {amount(needed)}). The highest — {_listing(top)} — are not distinguishable "
        "(their replicate intervals overlap), so none is ranked above the others; none is rated for "
        f"more than {amount(max(r['rated'] for r in top))}."
    )
    # A scaling law predicts a rate; a goal of users is not extrapolated from it.
    guess = _extrapolate(results, needed, workload) if unit != "users" else None
    if guess is not None:
        text += (
            f" The {guess['model']} fit predicts {guess['factor']} = {guess['n']} would reach "
            f"{u.rate(guess['predicted'])} — untested: measure it before buying."
        )
    return {"needed": needed, "choice": None, "extrapolated": guess, "text": text}


def _to_avoid(ratings: list[Rating], chosen: Rating, goal: float, results: Measured) -> str:
    """The configurations not to buy for this goal, and why: those too small for it, and those
    whose limit this study named as a role's memory (``memory:ROLE``) — their cores paid for and
    idle. From the measurements only: seed 003's 4-core, 8 GB server did not run short of memory
    (6,630 users at 66 % CPU, 1,400 MB of its 8 GB available; the paper found its combined servers
    bound by their processors)."""
    limits = {c["index"]: c["limit"] for c in results["cells"]}
    short = [r for r in ratings if r["rated"] < goal and r is not chosen]
    starved = [
        r
        for r in ratings
        if r is not chosen
        and (limit := limits.get(r["cell"])) is not None
        and LimitKind.of(limit) == LimitKind.MEMORY
    ]
    parts = []
    if short:
        parts.append(
            "too small for the goal: " + ", ".join(f"{r['label']} (rated for {rated(r)})" for r in short)
        )
    if starved:
        parts.append(
            "held back by its memory before its cores: "
            + ", ".join(f"{r['label']} ({limits[r['cell']]['resource']})" for r in starved)  # type: ignore[index]
        )
    return f" Avoid — {'; '.join(parts)}." if parts else ""


def _without_goal(ratings: list[Rating], headroom: float) -> str:
    best = max(ratings, key=lambda r: r["rated"])
    smallest = ratings[0]
    hint = JOB_GOAL_HINT if best["basis"] == "job" else f"{GOAL_HINT} to size for a load"
    top = _tied_with(best, ratings)
    if len(top) > 1:
        # Within the noise of each other: no best among them; the stated tiebreak is size.
        pick = top[0]
        return (
            f"No goal was given ({hint}). {_listing(top)} sustained the most, but their replicate "
            "intervals overlap: they are not distinguishable, so none is named the best. By size as "
            f"the tiebreak (the smallest of them uses the least), take {pick['label']}: with "
            f"{u.pct(headroom)} headroom, rate it for {rated(pick)}; the table below rates "
            "each configuration."
        )
    text = (
        f"No goal was given ({hint}). The best configuration, {best['label']}, "
        f"sustained {sustained(best)}: with {u.pct(headroom)} headroom, rate it for "
        f"{rated(best)}."
    )
    if smallest is not best:
        text += (
            f" The smallest, {smallest['label']}, is rated for {rated(smallest)}; "
            "the table below rates each configuration."
        )
    return text


def _limit_advice(cells: list[CellResult], capacity: list[CapacityEntry], for_each: list[str]) -> list[str]:
    """One piece of advice per kind of limit met, naming the cells it applies to. ``capacity``: the
    study's figures, which a storage limit's advice compares layouts by; ``for_each``: the factors
    naming a workload (cells of different workloads are not compared)."""
    by_advice: dict[str, list[str]] = {}
    for c in cells:
        advice = _advice_for(c, cells, capacity, for_each)
        if advice is not None:
            by_advice.setdefault(advice, []).append(c["label"])
    return [f"{advice} ({', '.join(labels)})" for advice, labels in by_advice.items()]


HOST_CPU_ADVICE = (
    "The host's CPU is the ceiling: more cores (a larger host, or separate hosts per tier and for "
    "the generator) raise it; more processes on the same host do not."
)
ROUND_TRIPS_ADVICE = (
    "Round trips across the link bound it, not its bandwidth: a faster link will not help; fewer "
    "round trips per message (larger batches) or a shorter round trip (the database on the same "
    "box, or a direct cable) will."
)
SOFTWARE_ADVICE = (
    "No hardware saturates at capacity: look at pools, locks, serialisation and round trips before "
    "buying hardware — more of it will not help."
)


def _advice_for(
    c: CellResult, cells: list[CellResult], capacity: list[CapacityEntry], for_each: list[str]
) -> str | None:
    """What to do about one cell's limit, in words; None for a limit no purchase moves (memory
    is advised on with the choice; a generator's, an unknown or an unreached limit, none)."""
    limit = c["limit"]
    if limit is None:
        return None
    kind = LimitKind.of(limit)
    scope = ResourceScope.of(limit["resource"])
    if kind == LimitKind.NETWORK_ROUND_TRIPS:
        return ROUND_TRIPS_ADVICE
    if kind == LimitKind.SOFTWARE:
        return SOFTWARE_ADVICE
    if scope is None:
        return None
    if kind.is_cpu:
        return _cpu_advice(kind, scope.name, (c["resources"].get("host") or {}).get("cpu_util_percent"))
    if kind == LimitKind.STORAGE:
        return _storage_advice(c, cells, capacity, for_each)
    if kind == LimitKind.NETWORK_BANDWIDTH and scope.kind == ScopeKind.LINK:
        return f"{scope.name}'s link is the limit: a faster link (its profile's class) or fewer round trips."
    if kind == LimitKind.NETWORK_BANDWIDTH:
        return f"The network ({scope.name}) is the limit: a faster link or fewer round trips."
    return None


def _cpu_advice(kind: LimitKind, role: str, host_util: float | None) -> str:
    """A CPU limit's advice: the host's when the host's CPU is the limit or was near saturation
    anyway (a role's cores are then the host's), else the role's — one busy thread (more
    processes help only where the host had idle cores) or all its cores. Roles judged together
    (``engine+db``: one machine's, or the CPUs placed for the system) share their own cores, not
    the host's, whose others may be the generator's."""
    if "+" in role and kind == LimitKind.CPU:
        together = " and ".join(role.split("+"))
        return f"{together} together are CPU-bound on their cores: more or faster cores raise their ceiling."
    if kind == LimitKind.HOST_CPU or (u.is_number(host_util) and host_util >= 100 * NEAR_SATURATION):
        return HOST_CPU_ADVICE
    if kind == LimitKind.CPU_THREAD:
        spare = u.is_number(host_util) and host_util < 70
        return f"{role} is bound by one busy thread: faster cores raise one process's ceiling" + (
            f"; the host had idle cores, so run more {role} processes or threads." if spare else "."
        )
    return f"{role} is CPU-bound: more or faster cores raise its ceiling."


VOLUME_LINE = re.compile(r"(?P<name>[A-Za-z0-9_.-]+)(?: \((?P<cls>[^)]*)\))?: (?P<desc>.* loop volume)")
"""A profile volume in a cell's hardware words (``data (hdd): 180 IOPS throttle on a 512M loop volume``)."""


def _hardware_layout(cell: CellResult) -> tuple[dict[str, dict[str, tuple[str, str]]], dict[str, list[str]]]:
    """Each role's volumes (name → its class and the class in words) and the rest of its hardware
    (cores, memory, link), from the words the cell recorded."""
    volumes: dict[str, dict[str, tuple[str, str]]] = {}
    rest: dict[str, list[str]] = {}
    for role, lines in (cell["hardware"] or {}).items():
        volumes[role], rest[role] = {}, []
        for line in lines:
            if line.startswith("profile ") or "ran outside the profile" in line:
                continue  # the profile's name differs with its volumes; not hardware of its own
            if m := VOLUME_LINE.fullmatch(line):
                volumes[role][m["name"]] = (m["cls"] or m["name"], m["desc"])
            else:
                rest[role].append(line)
    return volumes, rest


def _volume_change(cell: CellResult, other: CellResult, label: str) -> str | None:
    """How ``other``'s storage differs from ``cell``'s for the volume ``label`` bounded (faster
    volumes, a volume added beside it), when nothing else of their hardware does; None when it
    keeps that volume as it was, drops a volume, or differs in anything else."""
    role, _, name = label.rpartition("/")
    mine, my_rest = _hardware_layout(cell)
    theirs, their_rest = _hardware_layout(other)
    holders = [r for r, v in mine.items() if name in v and (not role or r == role)]
    if len(holders) != 1 or my_rest != their_rest or set(mine) != set(theirs):
        return None
    [holder] = holders
    if any(mine[r] != theirs[r] for r in mine if r != holder):
        return None
    before, after = mine[holder], theirs[holder]
    if name not in after or set(before) - set(after):
        return None
    changes = [
        f"{v} on {after[v][0]} instead of {before[v][0]}" for v in before if before[v][1] != after[v][1]
    ]
    added = [v for v in after if v not in before]
    if added:
        changes.append(f"{', '.join(added)} on {'a volume' if len(added) == 1 else 'volumes'} of its own")
    return "; ".join(changes) or None


def _storage_advice(
    cell: CellResult, cells: list[CellResult], capacity: list[CapacityEntry], for_each: list[str]
) -> str:
    """A volume or disk bounded ``cell``: which one, and what this study measured with it changed
    (another cell of the same workload whose only hardware difference is that role's volumes) —
    a layout that carried more is named with both figures; without one the advice is neutral."""
    scope = ResourceScope.parse(str(cell["limit"]["resource"])) if cell["limit"] else None
    if scope is None or scope.kind == ScopeKind.DISK:
        label = scope.name if scope else ""
        return (
            f"The disk {label} is the limit: a faster device, or another to take some of what it holds, "
            "raises that ceiling."
        )
    more, no_more = _layouts_measured(cell, cells, capacity, for_each, scope.name)
    what = f"The volume {scope.name} is the limit"
    if more:
        listing = "; ".join(said for _, said in sorted(more, reverse=True))
        which = "a layout" if len(more) == 1 else "layouts"
        return f"{what}. Measured in this study, {which} that changed it carried more: {listing}."
    text = (
        f"{what}: a faster device for it, or another to take some of what it holds, would raise that "
        "ceiling; this study measured no layout that shows by how much."
    )
    if no_more:
        text += f" Measured here: {'; '.join(no_more)}."
    return text


def _layouts_measured(
    cell: CellResult, cells: list[CellResult], capacity: list[CapacityEntry], for_each: list[str], label: str
) -> tuple[list[tuple[float, str]], list[str]]:
    """The other cells of ``cell``'s workload whose storage differs only in the volume ``label``,
    each said with both figures: those that carried more (with their figure, to rank them), and
    those that did not (or not beyond the replicates' noise)."""
    entries = {e["cell"]: e for e in capacity}
    mine = entries.get(cell["index"])
    if mine is None or not u.is_number(mine["value"]):
        return [], []
    workload = {k: cell["factors"].get(k) for k in for_each}
    ours = float(mine["value"])
    more: list[tuple[float, str]] = []
    no_more: list[str] = []
    for other in cells:
        entry = entries.get(other["index"])
        if other["index"] == cell["index"] or entry is None or not u.is_number(entry["value"]):
            continue
        if entry["unit"] != mine["unit"] or {k: other["factors"].get(k) for k in for_each} != workload:
            continue
        change = _volume_change(cell, other, label)
        if change is None:
            continue
        theirs = float(entry["value"])
        figures = f"{u.load(theirs, entry['unit'])} against {u.load(ours, mine['unit'])}"
        said = f"{other['label']} ({change}) {figures}"
        if theirs <= ours:
            no_more.append(f"{said}, no more")
        elif other["index"] in mine["indistinguishable"]:
            no_more.append(f"{said}, within the replicates' noise")
        else:
            more.append((theirs, said))
    return more, no_more


def advice(results: Measured, observations: list[Observation]) -> list[str]:
    """What follows from the limits, the generator and the fits, beyond the choice of size."""
    complete = [c for c in results["cells"] if c["status"] == "complete"]
    goal = results["goal"]
    out = _limit_advice(complete, results["capacity"], list(goal.get("for_each") or []) if goal else [])
    if any(o["topic"] == "generator" and o["severity"] == "warning" for o in observations):
        out.append("Run the load generator on another machine so that it does not take CPU from the SUT.")
    for entry in results["scaling"]:
        if entry.get("candidate"):  # a law was tried, and is no model of the points
            out.append(
                f"Before extrapolating over {entry['factor']}, test more values of it (four or "
                "more, past the "
                "point where the limit moves)."
            )
    if any(c["status"] != "complete" for c in results["cells"]):
        out.append("Re-run the cells that did not complete (`caplab run STUDY --resume`) before deciding.")
    return out


def _job_basis(results: Measured) -> str:
    """How a job study's configurations are rated, said before the choice."""
    jobs, goal = results["jobs"], results["goal"]
    if jobs is None:
        return ""
    size = jobs["size_factor"]
    each = size is not None and size in (goal["for_each"] if goal else [])
    at = f", at the largest {size} each ran" if size and not each else ""
    return (
        f"Each configuration is rated by its {jobs['rated_by']} phase's items a second (mean over the "
        f"job's repeats{at}). "
    )


class _Sized(TypedDict):
    """What meeting a goal adds to the recommendation, in results.json's key order."""

    needed: float | None
    choice: Choice | None
    choices: list[Choice]
    extrapolated: Extrapolation | None
    workloads: NotRequired[list[Workload]]
    text: str


def _per_workload(ratings: list[Rating], goal: Goal, results: Measured) -> _Sized:
    """The goal met for each workload (``goal.for_each``): configurations are compared only with
    others serving the same workload, and named without it. Without ``for_each``, one choice."""
    for_each = goal.get("for_each") or []
    if not for_each:
        met = _with_goal(ratings, goal, results, {})
        return {
            "needed": met["needed"],
            "choice": met["choice"],
            "extrapolated": met["extrapolated"],
            "text": met["text"],
            "choices": [met["choice"]] if met["choice"] else [],
        }
    naming = [n for n in results["matrix"]["naming"] if n not in for_each]
    groups: dict[str, list[Rating]] = {}
    for r in ratings:
        workload = {k: r["factors"].get(k) for k in for_each}
        short = cell_label({k: v for k, v in r["factors"].items() if k in naming}) or r["label"]
        groups.setdefault(cell_label(workload), []).append({**r, "label": short, "for": workload})
    workloads: list[Workload] = []
    for name, members in groups.items():
        served = members[0].get("for") or {}
        part = _with_goal(members, goal, results, served)
        workloads.append(
            {
                "for": served,
                "needed": part["needed"],
                "choice": part["choice"],
                "extrapolated": part["extrapolated"],
                "text": f"For {name}: {part['text'][:1].lower()}{part['text'][1:]}",
            }
        )
    return {
        "needed": workloads[0]["needed"] if workloads else None,
        "choice": None,
        "choices": [c for w in workloads if (c := w["choice"])],
        "extrapolated": None,
        "workloads": workloads,
        "text": " ".join(w["text"] for w in workloads),
    }


def recommend(results: Measured, observations: list[Observation]) -> Recommendation:
    """The recommendation, with the advice that follows from the limits and the ``observations``."""
    goal = results["goal"]
    headroom = goal["headroom"] if goal else DEFAULT_HEADROOM
    ratings = priced(_ratings(results, headroom), results["cells"])
    common: RecommendationBody = {
        "goal": goal,
        "headroom": headroom,
        "ratings": ratings,
        "choice": None,
        "choices": [],
        "advice": advice(results, observations),
        "basis": None,
    }
    if results.get("failover"):
        # Throughput carried through an outage rates no configuration: nothing was searched.
        return {**common, "ratings": [], "text": FAILOVER_TEXT}
    if not ratings:
        nothing = (
            "No configuration completed with a figure to size from: see the cells below."
            if results["cells"]
            else "The study has no cells yet: there is nothing to size from."
        )
        return {**common, "text": nothing}
    basis: Basis = next(
        (b for b in ("capacity", "job") if any(r["basis"] == b for r in ratings)), "throughput"
    )
    common["basis"] = basis
    prefix = (
        ""
        if basis == "capacity"
        else _job_basis(results)
        if basis == "job"
        else "No cell was searched: the figures are the throughput measured at the offered load — a "
        "configuration carried at least that much, perhaps more. "
    )
    if not goal:
        costs = cost_summary(ratings, None, results["cells"])
        cheapest = costs["cheapest"] if costs else None
        best = cheapest["cell"] if cheapest else max(ratings, key=lambda r: r["rated"])["cell"]
        worn = endurance_rows(next((c for c in results["cells"] if c["index"] == best), None))
        common["cost"], common["endurance"] = costs, worn
        text = prefix + _without_goal(ratings, headroom)
        text += (" " + costs["text"] if costs else "") + (" " + endurance_text(worn) if worn else "")
        return {**common, "text": text}
    sized = _per_workload(ratings, goal, results)
    common["choice"], common["choices"] = sized["choice"], sized["choices"]
    text = prefix + sized["text"]
    costs = cost_summary(ratings, goal, results["cells"])
    chosen = sized["choice"]
    worn = endurance_rows(
        next((c for c in results["cells"] if chosen and c["index"] == chosen["cell"]), None)
    )
    common["cost"], common["endurance"] = costs, worn
    text += (" " + costs["text"] if costs else "") + (" " + endurance_text(worn) if worn else "")
    if "workloads" in sized:
        return {
            **common,
            "needed": sized["needed"],
            "extrapolated": sized["extrapolated"],
            "workloads": sized["workloads"],
            "text": text,
        }
    return {**common, "needed": sized["needed"], "extrapolated": sized["extrapolated"], "text": text}
