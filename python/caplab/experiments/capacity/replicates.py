"""A cell's figures from its replicates: each replicate is a whole experiment (a search, or the
fixed load's trials) with a fresh start of the system; the cell's figure is their mean and its
interval their t-interval, each replicate's own figures and start time kept beside it."""

from __future__ import annotations

from collections.abc import Sequence

from caplab.analysis.replicates import Estimate, t_interval, within_resolution
from caplab.experiments.fixed import PERCENTILES
from caplab.json_types import JsonDict, JsonObject, items, member, number, pair

INTERVAL_SEARCH = "search"
"""One search's bracket: the confirmed load (less the confirmation trials' spread) up to the lowest
load that failed. It says how precisely this run located its capacity, not how far another run
would land: it is no confidence interval."""
INTERVAL_REPLICATES = "replicates"
"""A 95 % Student-t interval of the mean over replicates, each a fresh start of the system, never
narrower than the mean of their search brackets (replicates on one search step agree to that step)."""
STARTED = "started_at"
"""When a replicate began measuring (its system started), in each replicate's summary: kept in its
entry of the cell's replicates, the time a drift of the machine is read against."""
FIXED = "fixed"
"""A fixed-load replicate's own figures, in its summary (``experiments.fixed.replicate_figures``)."""


def combine_replicates(summaries: Sequence[JsonObject]) -> JsonDict:
    """The cell's share of the metrics from each replicate's: unchanged for one replicate (and for
    experiments that neither search nor load at a fixed rate: a job's phases), else one capacity,
    or a fixed load's throughput, latency and errors, with their interval from the replicates."""
    searched = [s for s in summaries if "capacity" in s]
    if len(summaries) == 1 or not searched:
        fixed = [s for s in summaries if FIXED in s]
        replicated = _fixed_replicates(fixed) if len(fixed) >= 2 and len(fixed) == len(summaries) else {}
        return _unsearched(summaries) | replicated
    closed = member(searched[0], "capacity").get("model") == "closed"
    found = [s for s in searched if member(s, "capacity").get("found")]
    capacity = _pooled(searched)
    all_trials = [t for s in searched for t in items(s, "search_trials")]
    limited = [s for s in searched if member(s, "capacity").get("generator_saturated")]
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


def _unsearched(summaries: Sequence[JsonObject]) -> JsonDict:
    """The last replicate's metrics (a job's phases; none for a fixed load, whose figures are its
    trials'), with every replicate's faults and ledgers."""
    merged: JsonDict = (
        {k: v for k, v in summaries[-1].items() if k not in (STARTED, FIXED)} if summaries else {}
    )
    for key in ("recovery", "ledger", "failover"):
        found = [r for s in summaries for r in items(s, key)]
        merged |= {key: found} if found else {}
    return merged


def _fixed_replicates(summaries: list[JsonObject]) -> JsonDict:
    """A fixed load's headline figures over its replicates: each the replicates' mean with its 95 %
    t-interval (the spread between runs, each a fresh start of the system, not between the trials
    of one run), each replicate's own figures and start time kept in ``replicates``. A latency
    percentile is given only where every replicate's sample supports it."""
    runs: list[JsonDict] = [{**member(s, FIXED), STARTED: s.get(STARTED)} for s in summaries]
    throughput = t_interval([float(number(r, "throughput") or 0.0) for r in runs])
    latency: JsonDict = {}
    for p in PERCENTILES:
        values = [number(member(r, "latency_ms"), p) for r in runs]
        latency[p] = (
            _estimate(t_interval([float(v) for v in values if v is not None])) if None not in values else None
        )
    errors = t_interval([float(number(r, "error_ratio") or 0.0) for r in runs])
    return {
        "throughput": throughput.mean,
        "replicated": {
            "replicate_count": len(runs),
            "interval": INTERVAL_REPLICATES,
            "throughput": _estimate(throughput),
            "latency_ms": latency,
            "error_ratio": _estimate(errors),
            "replicates": runs,
        },
    }


def _estimate(estimate: Estimate) -> JsonDict:
    return {"mean": estimate.mean, "ci95": [estimate.low, estimate.high]}


_PER_REPLICATE = (
    "found",
    "capacity_rps",
    "capacity_users",
    "ci95",
    "search_s",
    "trial_count",
    "message",
    "capacity_at_least",
)
"""A replicate's own figures, kept beside the cell's (in this order, as results.json stores them)."""


def _replicate_figures(capacity: JsonObject) -> JsonDict:
    return {k: capacity.get(k) for k in _PER_REPLICATE} | {
        "generator_saturated": bool(capacity.get("generator_saturated"))
    }


def _pooled(searched: list[JsonObject]) -> JsonDict:
    """The last replicate's capacity with each replicate's own figures beside it, their searches'
    time and trials summed; its figure and interval are still to be decided."""
    capacities = [member(s, "capacity") for s in searched]
    per_replicate = [
        _replicate_figures(c) | {STARTED: s.get(STARTED)} for s, c in zip(searched, capacities, strict=True)
    ]
    capacity = {k: v for k, v in capacities[-1].items() if k not in ("ci95", "search_s")}
    trial_counts = [number(c, "trial_count") for c in capacities]
    return capacity | {
        "replicates": per_replicate,
        "replicate_count": len(searched),
        "search_s": sum(number(c, "search_s") or 0.0 for c in capacities),
        "trial_count": sum(int(n or 0) for n in trial_counts),
        "capacity_at_least": None,
        "generator_saturated": False,
        # Each replicate that fell back below failing confirmations, by number.
        "unstable": "; ".join(
            f"replicate {n}: {c['unstable']}" for n, c in enumerate(capacities, 1) if c.get("unstable")
        )
        or None,
    }


def _no_interval(found: list[JsonObject], replicates: int, limited: int) -> JsonDict:
    """One capacity (or none) among the replicates is no interval: say so, claim nothing."""
    figures: JsonDict = {"found": bool(found), "ci95": None, "interval": None}
    if found:
        figures |= {k: member(found[0], "capacity").get(k) for k in ("capacity_rps", "capacity_users")}
    figures["message"] = (
        f"capacity found in {len(found)} of {replicates} replicates"
        + (f" ({limited} stopped at the generator's limit)" if limited else "")
        + ": no interval from replicates"
    )
    return figures


def _figure(summary: JsonObject, key: str) -> float:
    """A replicate's found capacity, in one unit (a replicate that found one has it)."""
    value = number(member(summary, "capacity"), key)
    if value is None:
        raise ValueError(f"a replicate that found its capacity has no {key}")
    return float(value)


def _replicate_interval(found: list[JsonObject], replicates: int, limited: int, closed: bool) -> JsonDict:
    """The mean of the replicates that found a capacity and its t-interval, in the unit searched,
    never narrower than their search brackets."""
    rps = t_interval([_figure(s, "capacity_rps") for s in found])
    if not closed:
        rps = within_resolution(rps, _brackets(found))
    figures: JsonDict = {
        "found": True,
        "capacity_rps": rps.mean,
        "interval": INTERVAL_REPLICATES,
        "message": f"mean of {len(found)} replicates"
        + (f" ({replicates - len(found)} found no capacity)" if len(found) < replicates else "")
        + (f" ({limited} stopped at the generator's limit)" if limited else ""),
    }
    if closed:
        users = within_resolution(t_interval([_figure(s, "capacity_users") for s in found]), _brackets(found))
        figures |= {"capacity_users": users.mean, "ci95": [users.low, users.high]}
    else:
        figures["ci95"] = [rps.low, rps.high]
    return figures


def _brackets(found: list[JsonObject]) -> list[tuple[float, float]]:
    """Each replicate's search bracket, in the unit searched; none unless every replicate has one."""
    brackets = [pair(member(s, "capacity"), "ci95") for s in found]
    return [b for b in brackets if b is not None] if all(brackets) else []


def _generator_floor(limited: list[JsonObject], replicates: int, closed: bool) -> JsonDict:
    """No replicate found a capacity and some stopped at the generator: the cell is inconclusive,
    and its capacity at least the lowest floor those replicates proved (a load that passed in each
    of them) — the generator's limit here, never the system's."""
    floors = [
        float(x) for s in limited if (x := number(member(s, "capacity"), "capacity_at_least")) is not None
    ]
    floor = min(floors) if len(floors) == len(limited) else None
    unit = " users" if closed else "/s"
    signals = items(member(member(limited[-1], "limit"), "evidence"), "signals")
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
