"""The study's ``findings:`` judged against what the results document measured: each cell's
figures handed to analysis/findings.py as it reads them, the verdicts put back as JSON.

A capacity's interval is its replicates' (a confidence interval) or none: one search's bracket says
how precisely that run placed the capacity, not where another run would land, so a cell without
replicates counts as its point value; each replicate's own capacity is a point of a trend. A
failover's recovery is each trial's figure, its interval the trials' t-interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from caplab.analysis.finding_types import Reading
from caplab.analysis.findings import (
    CellFigures,
    Judged,
    Placement,
    StudyFigures,
    judge_all,
    parse_findings,
)
from caplab.analysis.limit_kind import LimitKind
from caplab.analysis.replicates import t_interval
from caplab.json_types import JsonObject
from caplab.report.model.types import CapacityEntry, CellResult, FindingEntry, Measured
from caplab.units import cell_label, is_number


def study_findings(spec: JsonObject, measured: Measured) -> list[FindingEntry]:
    """Every finding of the study file, judged; empty when it states none."""
    findings = parse_findings(spec.get("findings"))
    if not findings:
        return []
    return [_entry(j) for j in judge_all(findings, study_figures(measured))]


def study_figures(measured: Measured) -> StudyFigures:
    """What the findings are judged against, from the results document."""
    capacity = {e["cell"]: e for e in measured["capacity"]}
    jobs = measured["jobs"]
    for e in jobs["capacity"] if jobs else []:
        capacity.setdefault(e["cell"], e)
    items: dict[int, dict[str, Reading]] = {}
    for row in jobs["rows"] if jobs else []:
        if is_number(row["items_per_s"]):
            low, high = _pair(row["ci95"])
            items.setdefault(row["cell"], {})[f"items_per_s:{row['phase']}"] = Reading.of(
                row["items_per_s"], low, high
            )
    cells = [_cell(c, capacity.get(c["index"]), items.get(c["index"], {})) for c in measured["cells"]]
    placements = [
        Placement(
            cell_label(entry["factors"]), entry["factors"], c["resource"], c["ratio"], *_pair(c["interval"])
        )
        for entry in measured["consolidation"]
        for c in entry["comparisons"]
    ]
    return StudyFigures(cells, placements)


def _pair(interval: Sequence[float | None] | None) -> tuple[float | None, float | None]:
    if interval is None or len(interval) != 2:
        return None, None
    return interval[0], interval[1]


def _cell(c: CellResult, capacity: CapacityEntry | None, items: dict[str, Reading]) -> CellFigures:
    readings = dict(items)
    if capacity is not None and is_number(capacity["value"]):
        replicated = capacity["interval"] == "replicates"
        low, high = _pair(capacity["ci95"]) if replicated else (None, None)
        values: list[float] = []
        if replicated and capacity["basis"] == "capacity" and (searched := c["metrics"]["capacity"]):
            values = searched.get("replicate_values", [])
        readings["capacity"] = Reading.of(capacity["value"], low, high, values)
    metrics = c["metrics"]
    if is_number(metrics["throughput"]):
        readings["throughput"] = Reading.of(metrics["throughput"])
    if is_number(metrics["latency_ms"]["p99"]):
        readings["p99"] = Reading.of(metrics["latency_ms"]["p99"])
    cpu = [c["resources"].get(role, {}).get("cpu_percent") for role in c["roles"]]
    if any(is_number(x) for x in cpu):
        readings["cpu"] = Reading.of(sum(x for x in cpu if is_number(x)))
    for name, per_trial in (
        ("recovery", [r["recovery_s"] for r in c["recovery"]]),
        ("action_s", [r["took_s"] for r in c["recovery"]]),
        ("group_recovery", [f["group_s"] for f in c["failover"]]),
        ("database_recovery", [f["p50_s"] for f in c["failover"]]),
        ("database_recovery_max", [f["max_s"] for f in c["failover"]]),
    ):
        if reading := _trials(per_trial):
            readings[name] = reading
    limit = c["limit"]
    ledgers = [r for r in c["recovery"] if r["acknowledged"] is not None]
    success = c["success"]
    return CellFigures(
        index=c["index"],
        label=c["label"] or f"#{c['index']}",
        factors=c["factors"],
        readings=readings,
        limit=LimitKind.of(limit).value if limit else None,
        limit_resource=str(limit.get("resource")) if limit and limit.get("resource") else None,
        successes=success["successes"] if success else None,
        failovers=success["trials"] if success else None,
        acknowledged=sum(r["acknowledged"] or 0 for r in ledgers) if ledgers else None,
        lost=sum(r["lost"] or 0 for r in ledgers) if ledgers else None,
    )


def _trials(values: Sequence[float | None]) -> Reading | None:
    """Per-trial figures as a mean with its t-interval, the trials kept as the points of a trend."""
    measured = [v for v in values if v is not None]
    if not measured:
        return None
    estimate = t_interval(measured)
    if estimate.n < 2:
        return Reading.of(estimate.mean, samples=measured)
    return Reading.of(estimate.mean, estimate.low, estimate.high, measured)


def _entry(j: Judged) -> FindingEntry:
    return {
        "claim": j.claim,
        "paper": j.paper,
        "kind": j.kind,
        "verdict": j.verdict.value,
        "reason": j.reason,
        "figures": [
            {"label": f.label, "value": f.value, "low": f.low, "high": f.high, "text": f.text()}
            for f in j.figures
        ],
        "estimates": [
            {
                "name": e.name,
                "value": e.value,
                "low": e.low,
                "high": e.high if math.isfinite(e.high) else None,
                "text": e.text(),
            }
            for e in j.estimates
        ],
    }
