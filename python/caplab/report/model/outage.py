"""A failover study's summary figures (``Measured.failover``): each action's recovery over its
trials, and each configuration's requests split at its outages with its consistency on either side
— from the cells as stored and as results.json shows them; the judging is analysis/outage.py's."""

from __future__ import annotations

from caplab.analysis import outage as analysed
from caplab.analysis import phases as phased
from caplab.analysis.failover import IsolatedSide
from caplab.analysis.outage import (
    NO_REQUESTS,
    Outage,
    Slot,
    TrialRecovery,
    around_outages,
    is_failover_study,
    outage_end,
    pooled,
    split_at_outages,
    summarise_actions,
)
from caplab.analysis.phases import Timeline
from caplab.analysis.recovery import RECOVERED_SHARE
from caplab.json_types import JsonObject, flag, integer, member, members, number
from caplab.report.model.types import (
    ActionRecovery,
    CellOutage,
    CellResult,
    FailoverSummary,
    PhaseSpread,
    RecoveryRow,
)
from caplab.store.document import CellRecord, TrialRecord


def _slots(trial: TrialRecord) -> list[Slot]:
    return [
        Slot(
            number(i, "start_s") or 0.0,
            number(i, "end_s") or 0.0,
            integer(i, "completed") or 0,
            integer(i, "errors") or 0,
            integer(i, "dropped") or 0,
            bool(flag(i, "warmup")),
        )
        for i in trial.intervals
    ]


def _database_times(raw: JsonObject) -> list[float]:
    return [
        s for d in members(member(raw, "recovery"), "databases") if (s := number(d, "recovery_s")) is not None
    ]


def _trials(raw: CellRecord, cell: CellResult) -> list[TrialRecovery]:
    """Each failover trial of the cell with the load's recovery from the same action."""
    loads = {(r["trial"], r["action"]): r for r in cell["recovery"]}
    out = []
    for entry, row in zip(raw.metrics.parts("failover"), cell["failover"], strict=True):
        load = loads.get((row["trial"], row["action"]))
        out.append(
            TrialRecovery(
                action=row["action"],
                databases=row["databases"],
                group_s=row["group_s"],
                database_s=_database_times(entry),
                not_recovered=len(row["not_recovered"]),
                resolution_s=row["resolution_s"] or (load["resolution_s"] if load else None),
                acknowledged=load["acknowledged"] if load else None,
                lost=load["lost"] if load else None,
                success=row["success"],
                after_ratio=load["after_ratio"] if load else None,
                failed=max(row["failed"], (load["failed"] or 0) if load else 0),
                timeline=Timeline.from_dict(phases) if (phases := row.get("phases")) else None,
                isolated=_isolated(entry),
            )
        )
    return out


def _outages(cell: CellResult, trial: int) -> list[Outage]:
    """The trial's outages: from each action's start until the load settled and (for the action
    read database by database) every database was back."""
    by_database = {f["action"]: f for f in cell["failover"] if f["trial"] == trial}
    out = []
    for r in cell["recovery"]:
        if (
            r["trial"] != trial
            or r["at_s"] is None
            or (not r["disrupted"] and r["action"] not in by_database)
        ):
            continue
        f = by_database.get(r["action"])
        back = [r["recovery_s"]] + ([f["max_s"] if not f["not_recovered"] else None] if f else [])
        fault = r.get("fault_s")
        fault = r["at_s"] if fault is None else fault  # the recoveries are measured from the fault
        out.append(Outage(r["at_s"], outage_end(fault, *back)))
    return out


def _ceiling(rows: list[RecoveryRow]) -> float | None:
    """Above this rate an interval after the outage is the held requests' burst, not the load."""
    before = [r["before_rps"] for r in rows if r["before_rps"]]
    return max(before) / RECOVERED_SHARE if before else None


def _cell_outage(raw: CellRecord, cell: CellResult) -> CellOutage:
    fixed = [t for t in raw.trials if t.kind == "fixed"]
    split, arounds = NO_REQUESTS, []
    for k, trial in enumerate(fixed):
        slots, outages = _slots(trial), _outages(cell, k)
        split = split + split_at_outages(slots, outages)
        rows = [r for r in cell["recovery"] if r["trial"] == k]
        arounds.append(around_outages(slots, outages, _ceiling(rows)))
    around = pooled(arounds)
    return {
        "cell": cell["index"],
        "label": cell["label"],
        "sent": split.sent,
        "errors_inside": split.errors_inside,
        "errors_outside": split.errors_outside,
        "dropped_inside": split.dropped_inside,
        "dropped_outside": split.dropped_outside,
        "before_cv": around.before_cv,
        "after_cv": around.after_cv,
        "consistency_before": around.before,
        "consistency_after": around.after,
    }


def _isolated(raw: JsonObject) -> IsolatedSide | None:
    """The isolated side a partition's action reported (experiments/failover.py keeps it)."""
    side = member(raw, "isolated")
    if not side:
        return None
    return IsolatedSide(
        integer(side, "lost") or 0, integer(side, "split_brain_writes") or 0, number(side, "demoted_after_s")
    )


def _action(a: analysed.ActionRecovery) -> ActionRecovery:
    out: ActionRecovery = {
        "action": a.action,
        "trials": a.trials,
        "databases": a.databases,
        "group_p50_s": a.group_p50_s,
        "group_p95_s": a.group_p95_s,
        "group_max_s": a.group_max_s,
        "database_p50_s": a.database_p50_s,
        "database_p95_s": a.database_p95_s,
        "database_max_s": a.database_max_s,
        "not_recovered": a.not_recovered,
        "resolution_s": a.resolution_s,
        "acknowledged": a.acknowledged,
        "lost": a.lost,
        "successes": a.successes,
        "judged": a.judged,
        "after_p50": a.after_p50,
        "after_min": a.after_min,
        "failed": a.failed,
        "phases": [_spread(p) for p in a.phases],
        "steps": [_spread(p) for p in a.steps],
    }
    if (i := a.isolated) is not None:
        out["isolated"] = {
            "trials": i.trials,
            "split_brain_writes": i.split_brain_writes,
            "lost": i.lost,
            "demoted_max_s": i.demoted_max_s,
        }
    return out


def _spread(p: phased.PhaseSpread) -> PhaseSpread:
    return {
        "name": p.name,
        "p50_s": p.p50_s,
        "p95_s": p.p95_s,
        "max_s": p.max_s,
        "share": p.share,
        "set_by": p.set_by,
    }


def failover_summary(
    raw_cells: list[CellRecord], cells: list[CellResult], job: bool
) -> FailoverSummary | None:
    """The summary of a failover study (analysis.outage.is_failover_study); None for any other."""
    trials = sum(len(c["failover"]) for c in cells)
    if not is_failover_study((c["searched"] for c in cells), trials, job):
        return None
    complete = [(raw, c) for raw, c in zip(raw_cells, cells, strict=True) if c["status"] == "complete"]
    actions = summarise_actions([t for raw, c in complete for t in _trials(raw, c)])
    return {
        "actions": [_action(a) for a in actions],
        "cells": [_cell_outage(raw, c) for raw, c in complete if c["failover"] or c["recovery"]],
    }
