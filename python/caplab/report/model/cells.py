"""One cell of the results: its factors and status, the figures of its measured trials, the
resources each role used, the limit and the search that found its capacity.

A searched cell's limit comes from the search (the demands at capacity, with the evidence of the
trial that failed above it). A fixed-load cell was never pushed to a limit, so its demands are
computed here from the resource samples: a resource already near saturation is the limit; else the
busiest resource and the throughput it would bound are reported as "not reached".
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from caplab.analysis.limit import find_limit
from caplab.analysis.scope import ResourceScope, ScopeKind
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.report.model.types import (
    ActionRow,
    CellCapacity,
    CellResult,
    DatabaseFailover,
    Latency,
    Limit,
    Metrics,
    PerUserRow,
    RecoveryRow,
    Resources,
    Search,
    SearchTrial,
    TrialRow,
    VolumeUse,
)
from caplab.units import cell_label, free_text

TrialKey = tuple[int, str, int]
"""(cell index, trial kind, trial index): how samples and trials are matched."""
NOT_ROLES = frozenset({"host", "generator", "app"})


def samples_by_trial(rows: list[dict[str, Any]]) -> dict[TrialKey, list[ResourceSample]]:
    """The store's sample rows, grouped by trial."""
    out: dict[TrialKey, list[ResourceSample]] = defaultdict(list)
    for r in rows:
        key = (r["cell_index"], r["trial_kind"], r["trial_index"])
        out[key].append(ResourceSample(r["t"], r["scope"], r["metric"], r["value"]))
    return out


def roles_of(resources: Resources) -> list[str]:
    return [r for r in resources if r not in NOT_ROLES and ":" not in r]  # volume:NAME is no role


def _latency(summary: object) -> Latency:
    found: dict[str, Any] = summary if isinstance(summary, dict) else {}
    return {
        "mean": found.get("mean"),
        "p50": found.get("p50"),
        "p90": found.get("p90"),
        "p95": found.get("p95"),
        "p99": found.get("p99"),
        "p999": found.get("p999"),
        "max": found.get("max"),
        "count": found.get("count"),
    }


def _capacity(m: dict[str, Any]) -> CellCapacity | None:
    c = m.get("capacity")
    if not isinstance(c, dict):
        return None
    closed = c.get("model") == "closed"
    ci = c.get("ci95") or [None, None]
    return {
        "value": c.get("capacity_users") if closed else c.get("capacity_rps"),
        "unit": "users" if closed else "req/s",
        "ci95": [ci[0], ci[1]] if len(ci) == 2 else [None, None],
        "interval": c.get("interval") if c.get("interval") in ("search", "replicates") else None,
        "replicates": int(c.get("replicate_count") or 1),
        "found": bool(c.get("found")),
        "message": c.get("message"),
        "trial_count": c.get("trial_count"),
        "search_s": c.get("search_s"),
        "precision": c.get("precision"),
        "slo": list(c.get("slo") or []),
        "generator_saturated": bool(c.get("generator_saturated")),
        "at_least": c.get("capacity_at_least") if c.get("generator_saturated") else None,
        "unstable": c.get("unstable"),
        "actions": [_action(a) for a in c.get("actions") or [] if isinstance(a, dict)],
        "per_user": _per_user(c.get("per_user")),
    }


def _action(a: dict[str, Any]) -> ActionRow:
    return {
        "name": str(a.get("name")),
        "completed": int(a.get("completed") or 0),
        "errors": int(a.get("errors") or 0),
        "per_s": float(a.get("per_s") or 0.0),
        "p50_ms": a.get("p50_ms"),
        "p90_ms": a.get("p90_ms"),
        "p95_ms": a.get("p95_ms"),
        "p99_ms": a.get("p99_ms"),
    }


def _per_user(u: object) -> PerUserRow | None:
    if not isinstance(u, dict) or u.get("offered_per_hour") is None or u.get("achieved_per_hour") is None:
        return None
    return {
        "offered_per_hour": float(u["offered_per_hour"]),
        "achieved_per_hour": float(u["achieved_per_hour"]),
    }


def _metrics(m: dict[str, Any], resources: dict[str, Any]) -> Metrics:
    consistency = m.get("consistency") or {}
    app = {**(resources.get("app") or {}), **(m.get("app") or {})}
    return {
        "trials": m.get("trials"),
        "offered_rate": m.get("offered_rate"),
        "users": m.get("users"),
        "throughput": m.get("throughput"),
        "throughput_stdev": m.get("throughput_stdev"),
        "throughput_min": m.get("throughput_min"),
        "throughput_max": m.get("throughput_max"),
        "latency_ms": _latency(m.get("latency_ms")),
        "service_time_ms": _latency(m.get("service_time_ms")),
        "sent": m.get("sent"),
        "completed": m.get("completed"),
        "errors": m.get("errors"),
        "dropped": m.get("dropped"),
        "error_ratio": m.get("error_ratio"),
        "consistency": consistency.get("rating"),
        "throughput_cv": consistency.get("throughput_cv"),
        "steady": m.get("steady"),
        "steady_notes": list(m.get("steady_notes") or []),
        "littles_law": m.get("littles_law"),
        "generator_cpu_us_per_request": m.get("generator_cpu_us_per_request"),
        "generator_saturated": bool(m.get("generator_saturated")),
        "capacity": _capacity(m),
        "app": app,
    }


def _search(m: dict[str, Any]) -> Search | None:
    trials = m.get("search_trials")
    if not isinstance(trials, list):
        return None
    kept: list[SearchTrial] = [
        {
            "phase": t["phase"],
            "load": t["load"],
            "passed": bool(t.get("passed")),
            "reasons": [free_text(r) for r in t.get("reasons") or []],
            "offered_rate": t.get("offered_rate"),
            "users": t.get("users"),
            "throughput": t.get("throughput"),
            "p50_ms": t.get("p50_ms"),
            "p99_ms": t.get("p99_ms"),
            "errors": t.get("errors"),
            "consistency": t.get("consistency"),
            "busiest": t.get("busiest"),
        }
        for t in trials
        if isinstance(t, dict)
    ]
    rejected: dict[str, int] = defaultdict(int)
    for t in kept:
        for reason in t["reasons"]:
            rejected[reason_kind(reason)] += 1
    return {
        "trials": kept,
        "count": len(kept),
        "rejected": sum(not t["passed"] for t in kept),
        "reasons": dict(sorted(rejected.items(), key=lambda kv: -kv[1])),
    }


def reason_kind(reason: str) -> str:
    """A rejection's kind: the SLO it failed (``p99<=100ms``), or ``not steady`` and the like."""
    return reason.split(":", 1)[0].strip()


def _trials(cell: dict[str, Any]) -> list[TrialRow]:
    out: list[TrialRow] = []
    for t in cell.get("trials") or []:
        meta = t.get("trial") or {}
        latency = t.get("latency_ms") or {}
        generator = t.get("generator") or {}
        out.append(
            {
                "index": meta.get("index"),
                "kind": meta.get("kind"),
                "status": meta.get("status"),
                "offered_rate": t.get("offered_rate"),
                "users": t.get("users"),
                "throughput": t.get("throughput"),
                "p50_ms": latency.get("p50"),
                "p99_ms": latency.get("p99"),
                "errors": t.get("errors"),
                "dropped": t.get("dropped"),
                "warmup_s": t.get("warmup_s"),
                "duration_s": t.get("duration_s"),
                "generator_cpu_us_per_request": generator.get("cpu_us_per_request"),
                "generator_saturated": bool(generator.get("saturated")),
            }
        )
    return out


def trial_key(cell: dict[str, Any], trial: dict[str, Any]) -> TrialKey:
    """The key that matches a trial of the study document with its samples."""
    meta = trial.get("trial") or {}
    return (cell["index"], str(meta.get("kind")), int(meta.get("index") or 0))


def _fixed_limit(
    cell: dict[str, Any],
    metrics: Metrics,
    roles: list[str],
    samples: dict[TrialKey, list[ResourceSample]],
) -> Limit | None:
    """The demands of a fixed-load cell, from the mean resource use over its trials' windows."""
    throughput = metrics["throughput"]
    if not throughput:
        return None
    per_trial = []
    for t in cell.get("trials") or []:
        rows = samples.get(trial_key(cell, t), [])
        warmup = float(t.get("warmup_s") or 0.0)
        if rows:
            per_trial.append(summarize(rows, warmup, warmup + float(t.get("duration_s") or 0.0)))
    if not per_trial:
        return None
    scopes: dict[str, dict[str, float]] = {}
    for scope in {s for trial in per_trial for s in trial}:
        metric_names = {m for trial in per_trial for m in trial.get(scope, {})}
        scopes[scope] = {
            m: statistics.fmean(trial[scope][m] for trial in per_trial if m in trial.get(scope, {}))
            for m in metric_names
        }
    # A cell whose system died in its trial (an OOM kill) summarises no resources: its roles are
    # the ones its samples name.
    named = [ResourceScope.of(s) for s in scopes]
    roles = roles or sorted(n.name for n in named if n is not None and n.kind == ScopeKind.ROLE)
    found = find_limit(float(throughput), scopes, roles)
    if found["kind"] != "software":
        return found
    demands = found["evidence"].get("demands") or []
    top = demands[0] if demands else None
    if top is None:
        return {**found, "kind": "not reached", "summary": "not reached: no resource was measured"}
    bound = f"; it would bound throughput near {top['bound_rps']:,.0f}/s" if top["bound_rps"] else ""
    return {
        **found,
        "resource": top["resource"],
        "kind": "not reached",
        "utilization": top["utilization"],
        "bound_rps": top["bound_rps"],
        "summary": f"not reached at this load: the busiest resource is {top['resource']} at "
        f"{top['utilization']:.0%} ({top['note']}){bound}",
    }


def cell_result(
    cell: dict[str, Any], samples: dict[TrialKey, list[ResourceSample]], naming: list[str] | None = None
) -> CellResult:
    """One cell as results.json holds it (see the module docstring); ``naming``: the factors its
    label shows (all when None)."""
    factors = cell.get("factors") or {}
    shown = {k: v for k, v in factors.items() if naming is None or k in naming}
    raw = cell.get("metrics") or {}
    resources: Resources = {k: v for k, v in (cell.get("resources") or {}).items() if k != "app"}
    roles = roles_of(resources)
    hardware = raw.get("hardware") or {}
    metrics = _metrics(raw, cell.get("resources") or {})
    searched = metrics["capacity"] is not None
    limit = raw.get("limit") if searched else _fixed_limit(cell, metrics, roles, samples)
    return {
        "index": cell["index"],
        "label": cell_label(shown),
        "factors": factors,
        "status": cell["status"],
        "error": free_text(cell["error"]) if cell.get("error") else None,
        "searched": searched,
        "roles": roles,
        "metrics": metrics,
        "resources": resources,
        "limit": limit,
        "search": _search(raw),
        "trials": _trials(cell),
        "hardware": _hardware(hardware),
        "volumes": _volumes(cell.get("resources") or {}, hardware.get("volume_baseline") or {}),
        "recovery": [_recovery(r, raw.get("ledger") or []) for r in raw.get("recovery") or []],
        "failover": [failover_row(f) for f in raw.get("failover") or []],
        "success": raw.get("success"),
        "cost": raw.get("cost"),
        "ratings": {str(k): v for k, v in (raw.get("ratings") or {}).items()},
    }


def _hardware(hardware: dict[str, Any]) -> dict[str, list[str]] | None:
    """Each role's profile in words, and a sentence for a role whose processes ran outside it
    for a while (started by one command, attached when the poll found them)."""
    roles: dict[str, list[str]] | None = hardware.get("roles")
    if roles is None:
        return None
    outside = hardware.get("ran_outside") or {}
    return {
        role: [*lines, *([str(outside[role])] if role in outside else [])] for role, lines in roles.items()
    }


def _recovery(raw: dict[str, Any], ledgers: list[dict[str, Any]]) -> RecoveryRow:
    action, load = raw.get("action") or {}, raw.get("load") or {}
    ledger = next((x for x in ledgers if x.get("trial") == raw.get("trial")), {})
    started, ended = action.get("started_s"), action.get("ended_s")
    ok = action.get("exit_code") == 0 and not action.get("timed_out")
    outcome = (
        "not run"
        if started is None
        else "timed out"
        if action.get("timed_out")
        else "done"
        if ok
        else f"exited {action.get('exit_code')}: {action.get('output') or ''}".strip()
    )
    return {
        "trial": int(raw.get("trial") or 0),
        "action": str(action.get("name") or "?"),
        "at_s": started,
        "took_s": ended - started if started is not None and ended is not None else None,
        "ok": ok,
        "outcome": free_text(outcome.splitlines()[-1] if outcome else ""),
        "disrupted": load.get("disrupted"),
        "recovery_s": load.get("recovery_s"),
        "unavailable_s": load.get("unavailable_s"),
        "failed": load.get("failed"),
        "before_rps": load.get("before_rps"),
        "after_ratio": load.get("after_ratio"),
        "resolution_s": load.get("resolution_s"),
        "acknowledged": ledger.get("acknowledged"),
        "lost": ledger.get("lost"),
    }


def failover_row(raw: dict[str, Any]) -> DatabaseFailover:
    """A failover trial as the runner stored it (study/failover.py), as the report shows it."""
    r, verdict = raw.get("recovery") or {}, raw.get("verdict")
    return {
        "trial": int(raw.get("trial") or 0),
        "action": str(raw.get("action") or "?"),
        "databases": len(r.get("databases") or []),
        "group_s": r.get("group_s"),
        "p50_s": r.get("p50_s"),
        "p95_s": r.get("p95_s"),
        "max_s": r.get("max_s"),
        "not_recovered": [str(n) for n in r.get("not_recovered") or []],
        "failed": int(r.get("failed") or 0),
        "resolution_s": float(r.get("resolution_s") or 0.0),
        "success": verdict.get("success") if verdict else None,
        "reasons": [free_text(str(x)) for x in (verdict.get("reasons") or [] if verdict else [])],
    }


def _volumes(resources: dict[str, Any], baselines: dict[str, Any]) -> dict[str, VolumeUse]:
    """Each ``volume:LABEL`` scope with the fio baseline of that volume (baselines are keyed
    ``role/volume``; a label is the volume's name, or ``role/volume`` where two roles share it)."""
    out: dict[str, VolumeUse] = {}
    for name, m in sorted(resources.items()):
        scope = ResourceScope.of(name)
        if scope is None or scope.kind != ScopeKind.VOLUME:
            continue
        label = scope.name
        key = next((k for k in baselines if label in (k, k.split("/", 1)[-1])), None)
        alone = {
            j["name"].split("-", 1)[0]: j.get("iops")
            for j in ((baselines.get(key) or {}).get("jobs") or [] if key else [])
        }
        out[label] = {
            "role": key.split("/", 1)[0] if key else None,
            "read_iops": m.get("read_iops"),
            "write_iops": m.get("write_iops"),
            "read_mb_s": m.get("read_mb_s"),
            "write_mb_s": m.get("write_mb_s"),
            "busy_percent": m.get("busy_percent"),
            "ceiling_percent": m.get("throttle_percent"),
            "await_ms": m.get("await_ms"),
            "alone_read_iops": alone.get("randread"),
            "alone_write_iops": alone.get("randwrite"),
        }
    return out
