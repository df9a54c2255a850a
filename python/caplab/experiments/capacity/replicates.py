"""A cell's capacity from its replicates: each replicate is a whole search with a fresh start of
the system; the cell's figure is their mean and its interval their t-interval."""

from __future__ import annotations

from typing import Any

from caplab.analysis.replicates import t_interval

INTERVAL_SEARCH = "search"
"""One search's bracket: the confirmed load (less the confirmation trials' spread) up to the lowest
load that failed. It says how precisely this run located its capacity, not how far another run
would land: it is no confidence interval."""
INTERVAL_REPLICATES = "replicates"
"""A 95 % Student-t interval of the mean over replicates, each a fresh start of the system."""


def combine_replicates(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's share of the metrics from each replicate's: unchanged for one replicate (and for
    experiments that search nothing), else one capacity with its interval from the replicates."""
    searched = [s for s in summaries if "capacity" in s]
    if len(summaries) == 1 or not searched:
        merged = dict(summaries[-1]) if summaries else {}
        for key in ("recovery", "ledger", "failover"):  # every replicate's faults and ledgers
            found = [r for s in summaries for r in s.get(key, [])]
            merged |= {key: found} if found else {}
        return merged
    closed = searched[0]["capacity"].get("model") == "closed"
    per_replicate = [
        {k: s["capacity"].get(k) for k in ("found", "capacity_rps", "capacity_users", "ci95", "search_s")}
        | {"trial_count": s["capacity"].get("trial_count"), "message": s["capacity"].get("message")}
        for s in searched
    ]
    found = [s for s in searched if s["capacity"].get("found")]
    capacity = {k: v for k, v in searched[-1]["capacity"].items() if k not in ("ci95", "search_s")}
    capacity |= {
        "replicates": per_replicate,
        "replicate_count": len(searched),
        "search_s": sum(r["search_s"] or 0.0 for r in per_replicate),
        "trial_count": sum(r["trial_count"] or 0 for r in per_replicate),
    }
    all_trials = [t for s in searched for t in s.get("search_trials") or []]
    if len(found) < 2:
        # One capacity (or none) among the replicates is no interval: say so, claim nothing.
        capacity |= {"found": bool(found), "ci95": None, "interval": None}
        if found:
            capacity |= {k: found[0]["capacity"].get(k) for k in ("capacity_rps", "capacity_users")}
        capacity["message"] = (
            f"capacity found in {len(found)} of {len(searched)} replicates: no interval from replicates"
        )
        return {
            "capacity": capacity,
            "search_trials": all_trials,
            "limit": (found or searched)[-1].get("limit"),
        }
    rps = t_interval([float(s["capacity"]["capacity_rps"]) for s in found])
    capacity |= {
        "found": True,
        "capacity_rps": rps.mean,
        "interval": INTERVAL_REPLICATES,
        "message": f"mean of {len(found)} replicates"
        + (f" ({len(searched) - len(found)} found no capacity)" if len(found) < len(searched) else ""),
    }
    if closed:
        users = t_interval([float(s["capacity"]["capacity_users"]) for s in found])
        capacity |= {"capacity_users": users.mean, "ci95": [users.low, users.high]}
    else:
        capacity["ci95"] = [rps.low, rps.high]
    return {"capacity": capacity, "search_trials": all_trials, "limit": found[-1].get("limit")}
