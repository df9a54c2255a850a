"""A cell's capacity from its replicates: each replicate is a whole search with a fresh start of
the system; the cell's figure is their mean and its interval their t-interval."""

from __future__ import annotations

from typing import Any

from caplab.analysis.replicates import t_interval, within_resolution

INTERVAL_SEARCH = "search"
"""One search's bracket: the confirmed load (less the confirmation trials' spread) up to the lowest
load that failed. It says how precisely this run located its capacity, not how far another run
would land: it is no confidence interval."""
INTERVAL_REPLICATES = "replicates"
"""A 95 % Student-t interval of the mean over replicates, each a fresh start of the system, never
narrower than the mean of their search brackets (replicates on one search step agree to that step)."""


def combine_replicates(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's share of the metrics from each replicate's: unchanged for one replicate (and for
    experiments that search nothing), else one capacity with its interval from the replicates."""
    searched = [s for s in summaries if "capacity" in s]
    if len(summaries) == 1 or not searched:
        return _unsearched(summaries)
    closed = searched[0]["capacity"].get("model") == "closed"
    found = [s for s in searched if s["capacity"].get("found")]
    capacity = _pooled(searched)
    all_trials = [t for s in searched for t in s.get("search_trials") or []]
    limited = [s for s in searched if s["capacity"].get("generator_saturated")]
    if not found and limited:
        return {
            "capacity": capacity | _generator_floor(limited, len(searched), closed),
            "search_trials": all_trials,
            "limit": limited[-1].get("limit"),
        }
    if len(found) < 2:
        return {
            "capacity": capacity | _no_interval(found, len(searched), len(limited)),
            "search_trials": all_trials,
            "limit": (found or searched)[-1].get("limit"),
        }
    return {
        "capacity": capacity | _replicate_interval(found, len(searched), len(limited), closed),
        "search_trials": all_trials,
        "limit": found[-1].get("limit"),
    }


def _unsearched(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The last replicate's metrics, with every replicate's faults and ledgers."""
    merged = dict(summaries[-1]) if summaries else {}
    for key in ("recovery", "ledger", "failover"):
        found = [r for s in summaries for r in s.get(key, [])]
        merged |= {key: found} if found else {}
    return merged


def _pooled(searched: list[dict[str, Any]]) -> dict[str, Any]:
    """The last replicate's capacity with each replicate's own figures beside it, their searches'
    time and trials summed; its figure and interval are still to be decided."""
    per_replicate = [
        {k: s["capacity"].get(k) for k in ("found", "capacity_rps", "capacity_users", "ci95", "search_s")}
        | {k: s["capacity"].get(k) for k in ("trial_count", "message", "capacity_at_least")}
        | {"generator_saturated": bool(s["capacity"].get("generator_saturated"))}
        for s in searched
    ]
    capacity = {k: v for k, v in searched[-1]["capacity"].items() if k not in ("ci95", "search_s")}
    return capacity | {
        "replicates": per_replicate,
        "replicate_count": len(searched),
        "search_s": sum(r["search_s"] or 0.0 for r in per_replicate),
        "trial_count": sum(r["trial_count"] or 0 for r in per_replicate),
        "capacity_at_least": None,
        "generator_saturated": False,
        # Each replicate that fell back below failing confirmations, by number.
        "unstable": "; ".join(
            f"replicate {n}: {s['capacity']['unstable']}"
            for n, s in enumerate(searched, 1)
            if s["capacity"].get("unstable")
        )
        or None,
    }


def _no_interval(found: list[dict[str, Any]], replicates: int, limited: int) -> dict[str, Any]:
    """One capacity (or none) among the replicates is no interval: say so, claim nothing."""
    figures: dict[str, Any] = {"found": bool(found), "ci95": None, "interval": None}
    if found:
        figures |= {k: found[0]["capacity"].get(k) for k in ("capacity_rps", "capacity_users")}
    figures["message"] = (
        f"capacity found in {len(found)} of {replicates} replicates"
        + (f" ({limited} stopped at the generator's limit)" if limited else "")
        + ": no interval from replicates"
    )
    return figures


def _replicate_interval(
    found: list[dict[str, Any]], replicates: int, limited: int, closed: bool
) -> dict[str, Any]:
    """The mean of the replicates that found a capacity and its t-interval, in the unit searched,
    never narrower than their search brackets."""
    rps = t_interval([float(s["capacity"]["capacity_rps"]) for s in found])
    if not closed:
        rps = within_resolution(rps, _brackets(found))
    figures: dict[str, Any] = {
        "found": True,
        "capacity_rps": rps.mean,
        "interval": INTERVAL_REPLICATES,
        "message": f"mean of {len(found)} replicates"
        + (f" ({replicates - len(found)} found no capacity)" if len(found) < replicates else "")
        + (f" ({limited} stopped at the generator's limit)" if limited else ""),
    }
    if closed:
        users = within_resolution(
            t_interval([float(s["capacity"]["capacity_users"]) for s in found]), _brackets(found)
        )
        figures |= {"capacity_users": users.mean, "ci95": [users.low, users.high]}
    else:
        figures["ci95"] = [rps.low, rps.high]
    return figures


def _brackets(found: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Each replicate's search bracket, in the unit searched; none unless every replicate has one."""
    brackets = [s["capacity"].get("ci95") for s in found]
    return [(float(b[0]), float(b[1])) for b in brackets if b] if all(brackets) else []


def _generator_floor(limited: list[dict[str, Any]], replicates: int, closed: bool) -> dict[str, Any]:
    """No replicate found a capacity and some stopped at the generator: the cell is inconclusive,
    and its capacity at least the lowest floor those replicates proved (a load that passed in each
    of them) — the generator's limit here, never the system's."""
    floors = [float(x) for s in limited if (x := s["capacity"].get("capacity_at_least")) is not None]
    floor = min(floors) if len(floors) == len(limited) else None
    unit = " users" if closed else "/s"
    signals = ((limited[-1].get("limit") or {}).get("evidence") or {}).get("signals") or []
    reason = str(signals[0]) if signals else "the generator fell behind its schedule"
    where = (
        f"in {len(limited)} of {replicates} replicates" if len(limited) < replicates else "in every replicate"
    )
    shown = f"capacity ≥ {floor:,.0f}{unit} (the generator's limit here)" if floor else "no capacity measured"
    return {
        "found": False,
        "ci95": None,
        "interval": None,
        "generator_saturated": True,
        "capacity_at_least": floor,
        "message": f"{shown}: the generator stopped the search {where}; {reason}",
    }
