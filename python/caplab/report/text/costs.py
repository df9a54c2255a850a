"""Prices and drive life in the recommendation: each rating's cost and cost per 1,000 units of
capacity, the cheapest configuration that meets the goal, and how long the chosen configuration's
rated volumes last at the rate it wrote them."""

from __future__ import annotations

from caplab import units as u
from caplab.analysis.cost import PER, per_capacity
from caplab.analysis.endurance import Endurance, endurance_line
from caplab.analysis.replicates import overlap
from caplab.report.model.scenario import goal_text
from caplab.report.model.types import CellResult, CheapestChoice, CostSummary, EnduranceRow, Goal, Rating


def priced(ratings: list[Rating], cells: list[CellResult]) -> list[Rating]:
    """The ratings with their configuration's cost (when the study priced them)."""
    costs = {c["index"]: c["cost"] for c in cells}
    out: list[Rating] = []
    for r in ratings:
        cost = costs.get(r["cell"])
        total = cost["total"] if cost else None
        capacity = r["value"] if r["rated_unit"] == "users" else r["rate"]  # per 1,000 users, or /s
        row: Rating = {**r, "cost": total, "cost_per_1000": per_capacity(total, capacity)}
        if r["unit"] == "items/s":  # a job's rate is tens or hundreds of items/s: priced per one
            row["cost_per_1000"], row["cost_per_item_s"] = None, per_capacity(total, r["rate"], 1.0)
        out.append(row)
    return out


def cost_summary(ratings: list[Rating], goal: Goal | None, cells: list[CellResult]) -> CostSummary | None:
    """The cheapest priced configuration whose rating carries the goal (or, without a goal, the
    lowest cost per capacity — or, where that is within the capacities' noise, the lowest price among
    those), in a sentence."""
    priced_cells = [c["cost"] for c in cells if c["cost"] and c["cost"]["total"] is not None]
    if not priced_cells:
        return None
    currency, basis = priced_cells[0]["currency"], priced_cells[0]["basis"]
    unit = f" {currency}" + (" an hour" if basis == "hour" else "")
    candidates = [
        r for r in ratings if r.get("cost") is not None and (goal is None or r["rated"] >= goal["rate"])
    ]
    if not candidates:
        text = (
            f"No priced configuration meets the goal of {goal_text(goal)}."
            if goal
            else "No priced configuration has a capacity to price."
        )
        return {"currency": currency, "basis": basis, "cheapest": None, "text": text}
    job = candidates[0]["unit"] == "items/s"

    def per_unit(r: Rating) -> float | None:
        return r.get("cost_per_item_s") if job else r.get("cost_per_1000")

    key = (lambda r: r.get("cost") or 0.0) if goal else (lambda r: per_unit(r) or float("inf"))
    best = min(candidates, key=key)
    tied = [] if goal else _within_noise(best, candidates, 1.0 if job else PER)
    if tied:
        # Cost per capacity within the capacities' noise: not ranked by it; the lower price decides.
        tied = [r for r in candidates if r is best or any(r is t for t in tied)]
        best = min(tied, key=lambda r: r.get("cost") or 0.0)
    cost = float(best.get("cost") or 0.0)
    per = per_unit(best)
    cheapest: CheapestChoice = {
        "cell": best["cell"],
        "label": best["label"],
        "cost": cost,
        "cost_per_1000": best.get("cost_per_1000"),
        "rated": best["rated"],
    }
    if job:
        cheapest["cost_per_item_s"] = per
    per_what = "item/s" if job else f"{PER:,.0f}{per_unit_name(best)} of capacity"
    per_text = f" ({u.num(per)}{unit} per {per_what})" if per is not None else ""
    what = "Cheapest that meets the goal" if goal else "Lowest cost per capacity"
    if tied:
        what = (
            f"Cost per capacity is not distinguishable among {', '.join(r['label'] for r in tied)} (their "
            "capacities' replicate intervals overlap), so they are not ranked by it; the lowest price "
            "among them decides"
        )
    rated = u.load(best["rated"], best["rated_unit"])
    text = f"{what}: {best['label']} at {u.num(cost)}{unit}{per_text}, rated for {rated}."
    others = sorted((r for r in candidates if r is not best), key=key)
    if others and not tied:
        nxt = others[0]
        text += f" Next: {nxt['label']} at {u.num(nxt.get('cost'))}{unit}."
    return {"currency": currency, "basis": basis, "cheapest": cheapest, "text": text}


def per_unit_name(r: Rating) -> str:
    """What a configuration's cost is per, after the thousand: ``/s`` or `` users``."""
    return " users" if r["rated_unit"] == "users" else "/s"


def _per_unit_range(r: Rating, per: float) -> tuple[float, float] | None:
    """The cost per capacity over the capacity's replicate interval (none from one search)."""
    low, high = r["ci95"] if r["interval"] == "replicates" else (None, None)
    cost = r.get("cost")
    if not (u.is_number(low) and u.is_number(high) and u.is_number(cost)) or low <= 0:
        return None
    return cost * per / high, cost * per / low


def _within_noise(best: Rating, candidates: list[Rating], per: float) -> list[Rating]:
    """The candidates whose cost per capacity is within the noise of the best's: the ranges their
    capacities' replicate intervals give overlap."""
    mine = _per_unit_range(best, per)
    if mine is None:
        return []
    out = []
    for r in candidates:
        theirs = _per_unit_range(r, per) if r is not best else None
        if theirs is not None and overlap(mine, theirs):
            out.append(r)
    return out


def endurance_text(rows: list[EnduranceRow]) -> str:
    lines = [
        Endurance(r["volume"], r["write_mb_s"], r["tb_per_day"], r["rated_tbw"], r["years"]) for r in rows
    ]
    return " ".join(endurance_line(e) + "." for e in lines)
