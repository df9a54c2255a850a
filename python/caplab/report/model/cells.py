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
from collections.abc import Mapping
from typing import cast

from caplab.analysis.limit import find_limit
from caplab.analysis.phases import Timeline
from caplab.analysis.scope import ResourceScope, ScopeKind
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.json_types import (
    EMPTY,
    JsonObject,
    flag,
    integer,
    items,
    member,
    members,
    number,
    optional_member,
    strings,
    text,
    truthy,
)
from caplab.report.model.types import (
    ActionRow,
    Busiest,
    CellCapacity,
    CellCost,
    CellResult,
    DatabaseFailover,
    Factors,
    FailoverPhases,
    FailoverSuccess,
    IntervalKind,
    Latency,
    Limit,
    LittlesLaw,
    Metrics,
    PerUserRow,
    RecoveryRow,
    Replicated,
    ReplicatedFigure,
    Resources,
    Search,
    SearchTrial,
    TrialRow,
    VolumeRating,
    VolumeUse,
)
from caplab.store.document import CellMetrics, CellRecord, DocumentFormatError, TrialRecord
from caplab.store.reading import SampleRow
from caplab.units import cell_label, free_text

TrialKey = tuple[int, str, int]
"""(cell index, trial kind, trial index): how samples and trials are matched."""
NOT_ROLES = frozenset({"host", "generator", "app"})


def samples_by_trial(rows: list[SampleRow]) -> dict[TrialKey, list[ResourceSample]]:
    """The store's sample rows, grouped by trial."""
    out: dict[TrialKey, list[ResourceSample]] = defaultdict(list)
    for r in rows:
        key = (r["cell_index"], r["trial_kind"], r["trial_index"])
        out[key].append(ResourceSample(r["t"], r["scope"], r["metric"], r["value"]))
    return out


def roles_of(resources: Resources) -> list[str]:
    return [r for r in resources if r not in NOT_ROLES and ":" not in r]  # volume:NAME is no role


def _latency(found: JsonObject) -> Latency:
    return {
        "mean": number(found, "mean"),
        "p50": number(found, "p50"),
        "p90": number(found, "p90"),
        "p95": number(found, "p95"),
        "p99": number(found, "p99"),
        "p999": number(found, "p999"),
        "max": number(found, "max"),
        "count": integer(found, "count"),
    }


def _interval(c: JsonObject) -> IntervalKind | None:
    kind = c.get("interval")
    return "search" if kind == "search" else "replicates" if kind == "replicates" else None


def _capacity(m: CellMetrics) -> CellCapacity | None:
    c = m.part("capacity")
    if c is None:
        return None
    closed = c.get("model") == "closed"
    ci = items(c, "ci95")
    low, high = (ci[0], ci[1]) if len(ci) == 2 else (None, None)
    return {
        "value": number(c, "capacity_users" if closed else "capacity_rps"),
        "unit": "users" if closed else "req/s",
        "ci95": [_figure(low), _figure(high)],
        "interval": _interval(c),
        "replicates": integer(c, "replicate_count") or 1,
        "found": truthy(c, "found"),
        "message": text(c, "message"),
        "trial_count": integer(c, "trial_count"),
        "search_s": number(c, "search_s"),
        "precision": number(c, "precision"),
        "slo": strings(c, "slo"),
        "generator_saturated": truthy(c, "generator_saturated"),
        "at_least": number(c, "capacity_at_least") if truthy(c, "generator_saturated") else None,
        "unstable": text(c, "unstable"),
        "actions": [_action(a) for a in members(c, "actions")],
        "per_user": _per_user(member(c, "per_user")),
        "replicate_values": [
            v
            for r in members(c, "replicates")
            if (v := number(r, "capacity_users" if closed else "capacity_rps")) is not None
        ],
    }


def _replicated(r: JsonObject | None) -> Replicated | None:
    """A fixed-load cell's figures over its replicates, as combine_replicates stored them."""
    if r is None:
        return None
    throughput, errors = (
        _replicated_figure(member(r, "throughput")),
        _replicated_figure(member(r, "error_ratio")),
    )
    if throughput is None or errors is None:
        return None
    latency = member(r, "latency_ms")
    return {
        "replicates": integer(r, "replicate_count") or len(items(r, "replicates")),
        "throughput": throughput,
        "p50_ms": _replicated_figure(member(latency, "p50")),
        "p90_ms": _replicated_figure(member(latency, "p90")),
        "p95_ms": _replicated_figure(member(latency, "p95")),
        "p99_ms": _replicated_figure(member(latency, "p99")),
        "error_ratio": errors,
        "runs": [
            {
                "started_at": text(run, "started_at"),
                "throughput": number(run, "throughput"),
                "p50_ms": number(member(run, "latency_ms"), "p50"),
                "p99_ms": number(member(run, "latency_ms"), "p99"),
                "error_ratio": number(run, "error_ratio"),
            }
            for run in members(r, "replicates")
        ],
    }


def _replicated_figure(f: JsonObject) -> ReplicatedFigure | None:
    mean, ci = number(f, "mean"), items(f, "ci95")
    if mean is None:
        return None
    return {"mean": mean, "ci95": [_figure(ci[0]), _figure(ci[1])] if len(ci) == 2 else [None, None]}


def _figure(value: object) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _action(a: JsonObject) -> ActionRow:
    return {
        "name": str(a.get("name")),
        "completed": integer(a, "completed") or 0,
        "errors": integer(a, "errors") or 0,
        "per_s": float(number(a, "per_s") or 0.0),
        "p50_ms": number(a, "p50_ms"),
        "p90_ms": number(a, "p90_ms"),
        "p95_ms": number(a, "p95_ms"),
        "p99_ms": number(a, "p99_ms"),
    }


def _per_user(u: JsonObject) -> PerUserRow | None:
    offered, achieved = number(u, "offered_per_hour"), number(u, "achieved_per_hour")
    if offered is None or achieved is None:
        return None
    return {"offered_per_hour": float(offered), "achieved_per_hour": float(achieved)}


def _app(cell: CellRecord) -> dict[str, float | None]:
    """The system's own counters: the role's samples, then what the cell's metrics added."""
    found = {**cell.resource("app"), **cell.metrics.app}
    return {name: _figure(value) for name, value in found.items()}


def _metrics(cell: CellRecord) -> Metrics:
    m = cell.metrics
    consistency = m.part("consistency") or EMPTY
    return {
        "trials": m.trials,
        "offered_rate": m.figure("offered_rate"),
        "users": m.users,
        "throughput": m.figure("throughput"),
        "throughput_stdev": m.figure("throughput_stdev"),
        "throughput_min": m.figure("throughput_min"),
        "throughput_max": m.figure("throughput_max"),
        "latency_ms": _latency(m.part("latency_ms") or EMPTY),
        "service_time_ms": _latency(m.part("service_time_ms") or EMPTY),
        "sent": integer(m.json, "sent"),
        "completed": integer(m.json, "completed"),
        "errors": integer(m.json, "errors"),
        "dropped": integer(m.json, "dropped"),
        "error_ratio": m.figure("error_ratio"),
        "consistency": text(consistency, "rating"),
        "throughput_cv": number(consistency, "throughput_cv"),
        "steady": m.steady,
        "steady_notes": m.steady_notes,
        "littles_law": cast(LittlesLaw | None, m.part("littles_law")),  # written by analysis.steady
        "generator_cpu_us_per_request": m.figure("generator_cpu_us_per_request"),
        "generator_saturated": m.generator_saturated,
        "capacity": _capacity(m),
        "replicated": _replicated(m.part("replicated")),
        "app": _app(cell),
    }


def _search_trial(t: JsonObject) -> SearchTrial:
    return {
        "phase": str(t["phase"]),
        "load": _required_figure(t, "load"),
        "passed": truthy(t, "passed"),
        "reasons": [free_text(r) for r in strings(t, "reasons")],
        "offered_rate": number(t, "offered_rate"),
        "users": integer(t, "users"),
        "throughput": number(t, "throughput"),
        "p50_ms": number(t, "p50_ms"),
        "p99_ms": number(t, "p99_ms"),
        "errors": integer(t, "errors"),
        "consistency": text(t, "consistency"),
        "busiest": cast(Busiest | None, optional_member(t, "busiest")),  # written by the search
    }


def _required_figure(obj: JsonObject, key: str) -> float:
    found = number(obj, key)
    if found is None:
        raise DocumentFormatError(f"a search trial has no {key}: {dict(obj)!r}")
    return found


def _search(m: CellMetrics) -> Search | None:
    if not isinstance(m.json.get("search_trials"), list):
        return None
    kept = [_search_trial(t) for t in m.parts("search_trials")]
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


def _trials(cell: CellRecord) -> list[TrialRow]:
    return [
        {
            "index": t.index,
            "kind": t.kind,
            "status": t.status,
            "offered_rate": t.offered_rate,
            "users": t.users,
            "throughput": t.throughput,
            "p50_ms": number(t.latency_ms, "p50"),
            "p99_ms": number(t.latency_ms, "p99"),
            "errors": t.errors,
            "dropped": t.dropped,
            "warmup_s": number(t.result, "warmup_s"),
            "duration_s": number(t.result, "duration_s"),
            "generator_cpu_us_per_request": number(t.generator, "cpu_us_per_request"),
            "generator_saturated": truthy(t.generator, "saturated"),
        }
        for t in cell.trials
    ]


def trial_key(cell: CellRecord, trial: TrialRecord) -> TrialKey:
    """The key that matches a trial of the study document with its samples."""
    return (cell.index, trial.kind, trial.index)


def _fixed_limit(
    cell: CellRecord,
    metrics: Metrics,
    roles: list[str],
    samples: dict[TrialKey, list[ResourceSample]],
) -> Limit | None:
    """The demands of a fixed-load cell, from the mean resource use over its trials' windows."""
    throughput = metrics["throughput"]
    if not throughput:
        return None
    per_trial = []
    for t in cell.trials:
        rows = samples.get(trial_key(cell, t), [])
        if rows:
            per_trial.append(summarize(rows, t.warmup_s, t.warmup_s + t.duration_s))
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
    cell: CellRecord, samples: dict[TrialKey, list[ResourceSample]], naming: list[str] | None = None
) -> CellResult:
    """One cell as results.json holds it (see the module docstring); ``naming``: the factors its
    label shows (all when None)."""
    factors = cast(Factors, dict(cell.factors))  # the study file's values: JSON
    shown = {k: v for k, v in factors.items() if naming is None or k in naming}
    resources = _resources(cell)
    roles = roles_of(resources)
    hardware = cell.metrics.part("hardware") or EMPTY
    metrics = _metrics(cell)
    searched = metrics["capacity"] is not None
    # A search stored the limit it found (analysis.limit's shape).
    limit = (
        cast(Limit | None, cell.metrics.part("limit"))
        if searched
        else _fixed_limit(cell, metrics, roles, samples)
    )
    ledgers = cell.metrics.parts("ledger")
    return {
        "index": cell.index,
        "label": cell_label(shown),
        "factors": factors,
        "status": cell.status,
        "error": free_text(cell.error) if cell.error else None,
        "searched": searched,
        "roles": roles,
        "metrics": metrics,
        "resources": resources,
        "limit": limit,
        "search": _search(cell.metrics),
        "trials": _trials(cell),
        "hardware": _hardware(hardware),
        "placement": _placement(cell.metrics.part("placement")),
        "volumes": _volumes(cell.scopes, member(hardware, "volume_baseline")),
        "recovery": [_recovery(r, ledgers) for r in cell.metrics.parts("recovery")],
        "failover": [failover_row(f) for f in cell.metrics.parts("failover")],
        # Written by the failover verdict and the pricing (analysis.cost): their shapes.
        "success": cast(FailoverSuccess | None, cell.metrics.part("success")),
        "cost": cast(CellCost | None, cell.metrics.part("cost")),
        "ratings": {str(k): cast(VolumeRating, v) for k, v in member(cell.metrics.json, "ratings").items()},
    }


def _resources(cell: CellRecord) -> Resources:
    """Each scope's figures, but the system's own counters (``app``, shown with the metrics)."""
    return {
        scope: {metric: cast(float, value) for metric, value in cell.resource(scope).items()}
        for scope in cell.scopes
        if scope != "app"
    }


def _placement(placement: object) -> str | None:
    """The placement's words, as the runner wrote them (``caplab.profiles.placement``)."""
    text = placement.get("text") if isinstance(placement, Mapping) else None
    return text if isinstance(text, str) else None


def _hardware(hardware: JsonObject) -> dict[str, list[str]] | None:
    """Each role's profile in words, and a sentence for a role whose processes ran outside it
    for a while (started by one command, attached when the poll found them)."""
    roles = optional_member(hardware, "roles")
    if roles is None:
        return None
    outside = member(hardware, "ran_outside")
    return {
        role: [*strings(roles, role), *([str(outside[role])] if role in outside else [])] for role in roles
    }


def _outcome(action: JsonObject) -> str:
    if action.get("started_s") is None:
        return "not run"
    if action.get("timed_out"):
        return "timed out"
    if action.get("exit_code") == 0:
        return "done"
    return f"exited {action.get('exit_code')}: {action.get('output') or ''}".strip()


def _recovery(raw: JsonObject, ledgers: list[JsonObject]) -> RecoveryRow:
    action, load = member(raw, "action"), member(raw, "load")
    ledger = next((x for x in ledgers if x.get("trial") == raw.get("trial")), EMPTY)
    started, ended = number(action, "started_s"), number(action, "ended_s")
    outcome = _outcome(action)
    return {
        "trial": integer(raw, "trial") or 0,
        "action": str(action.get("name") or "?"),
        "at_s": started,
        "fault_s": number(load, "fault_s") if load else started,
        "took_s": ended - started if started is not None and ended is not None else None,
        "ok": action.get("exit_code") == 0 and not action.get("timed_out"),
        "outcome": free_text(outcome.splitlines()[-1] if outcome else ""),
        "disrupted": flag(load, "disrupted"),
        "recovery_s": number(load, "recovery_s"),
        "unavailable_s": number(load, "unavailable_s"),
        "failed": integer(load, "failed"),
        "before_rps": number(load, "before_rps"),
        "after_ratio": number(load, "after_ratio"),
        "resolution_s": number(load, "resolution_s"),
        "acknowledged": integer(ledger, "acknowledged"),
        "lost": integer(ledger, "lost"),
    }


def failover_row(raw: JsonObject) -> DatabaseFailover:
    """A failover trial as the runner stored it (experiments' failover outcome), as the report shows it."""
    r, verdict = member(raw, "recovery"), optional_member(raw, "verdict")
    return {
        "trial": integer(raw, "trial") or 0,
        "action": str(raw.get("action") or "?"),
        "databases": len(items(r, "databases")),
        "group_s": number(r, "group_s"),
        "p50_s": number(r, "p50_s"),
        "p95_s": number(r, "p95_s"),
        "max_s": number(r, "max_s"),
        "not_recovered": strings(r, "not_recovered"),
        "failed": integer(r, "failed") or 0,
        "resolution_s": float(number(r, "resolution_s") or 0.0),
        "success": flag(verdict, "success") if verdict is not None else None,
        "reasons": [free_text(x) for x in strings(verdict, "reasons")] if verdict is not None else [],
        "phases": _phases(optional_member(raw, "phases")),
    }


def _phases(raw: JsonObject | None) -> FailoverPhases | None:
    """A failover's timeline as the runner stored it (analysis.phases.Timeline)."""
    if raw is None:
        return None
    t = Timeline.from_dict(raw)
    return {
        "fault_s": t.fault_s,
        "detected_s": t.detected_s,
        "elected_s": t.elected_s,
        "promoted_s": t.promoted_s,
        "writable_s": t.writable_s,
        "first_commit_s": t.first_commit_s,
        "last_commit_s": t.last_commit_s,
        "load_back_s": t.load_back_s,
        "resolution_s": t.resolution_s,
        "series_resolution_s": t.series_resolution_s,
        "set_by": {k: free_text(v) for k, v in t.set_by.items()},
    }


def _volumes(resources: JsonObject, baselines: JsonObject) -> dict[str, VolumeUse]:
    """Each ``volume:LABEL`` scope with the fio baseline of that volume (baselines are keyed
    ``role/volume``; a label is the volume's name, or ``role/volume`` where two roles share it)."""
    out: dict[str, VolumeUse] = {}
    for name in sorted(resources):
        scope = ResourceScope.of(name)
        if scope is None or scope.kind != ScopeKind.VOLUME:
            continue
        m, label = member(resources, name), scope.name
        key = next((k for k in baselines if label in (k, k.split("/", 1)[-1])), None)
        jobs = members(member(baselines, key), "jobs") if key else []
        alone = {str(j.get("name")).split("-", 1)[0]: number(j, "iops") for j in jobs}
        out[label] = {
            "role": key.split("/", 1)[0] if key else None,
            "read_iops": number(m, "read_iops"),
            "write_iops": number(m, "write_iops"),
            "read_mb_s": number(m, "read_mb_s"),
            "write_mb_s": number(m, "write_mb_s"),
            "busy_percent": number(m, "busy_percent"),
            "ceiling_percent": number(m, "throttle_percent"),
            "await_ms": number(m, "await_ms"),
            "alone_read_iops": alone.get("randread"),
            "alone_write_iops": alone.get("randwrite"),
        }
    return out
