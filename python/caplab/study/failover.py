"""A study's failover trial read per database: each database's recovery from the fault (from the
per-target interval series), the ledger counted database by database, and the trial judged against
the study's recovery SLO — what a cell's k/K is made of."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caplab.analysis.failover import GroupRecovery, group_recovery, judge, reported_seconds
from caplab.analysis.recovery import Interval
from caplab.engine import RunResult
from caplab.experiments.actions import ActionOutcome
from caplab.spec import PostgresTargetSpec, RecoverySpec
from caplab.workloads.postgres import ledger_rows, shown_url


def database_name(url: str) -> str:
    """A libpq URL's database (``…/ag_7?target_session_attrs=…`` → ``ag_7``): what a reader calls it."""
    path = url.split("://", 1)[-1].partition("/")[2]
    return path.partition("?")[0] or shown_url(url)


def database_series(result: RunResult, url: str) -> dict[str, list[Interval]]:
    """Each database's interval series by its name: the run's own for one target (``url``), else one
    per target, places in the round-robin that name one database added together."""
    if not result.per_target:
        only = [Interval(i.start_s, i.end_s, i.completed, i.errors) for i in result.intervals]
        return {database_name(url): only}
    merged: dict[str, dict[tuple[float, float], list[int]]] = {}
    for target in result.per_target:
        slots = merged.setdefault(database_name(target.label), {})
        for i in target.intervals:
            counts = slots.setdefault((i.start_s, i.end_s), [0, 0])
            counts[0] += i.completed
            counts[1] += i.errors
    return {
        label: [Interval(start, end, done, errors) for (start, end), (done, errors) in sorted(slots.items())]
        for label, slots in merged.items()
    }


def ledger_entry(
    pg: PostgresTargetSpec, passfile: Path | None, series: dict[str, list[Interval]], index: int
) -> dict[str, Any]:
    """What the trial acknowledged against what each database holds now (every ledger emptied for
    the next trial). Lost is counted database by database: a surplus on one (a commit whose
    acknowledgement the failure swallowed) hides no loss on another."""
    acknowledged = held = lost = 0
    lost_in: list[str] = []
    for url in pg.urls():
        name = database_name(url)
        done = sum(i.completed for i in series.get(name, []))  # the warm-up wrote rows too
        rows = ledger_rows(url, passfile, empty=True)
        acknowledged, held = acknowledged + done, held + rows
        if done > rows:
            lost += done - rows
            lost_in.append(name)
    entry: dict[str, Any] = {"trial": index, "acknowledged": acknowledged, "held": held, "lost": lost}
    return entry | ({"lost_in": lost_in} if lost_in else {})


def judged_failover(
    spec: RecoverySpec | None,
    series: dict[str, list[Interval]],
    outcomes: list[ActionOutcome],
    ledger: dict[str, Any] | None,
    trial: int,
) -> dict[str, Any] | None:
    """The trial's first action that ran, read per database and judged: ``{"trial", "action",
    "recovery": GroupRecovery, "verdict"}`` (no verdict without a recovery SLO); None when no
    action ran."""
    ran = next((o for o in outcomes if o.started_s is not None), None)
    if ran is None or ran.started_s is None:
        return None
    recovery: GroupRecovery = group_recovery(series, ran.started_s, reported_seconds(ran.reported))
    entry: dict[str, Any] = {"trial": trial, "action": ran.name, "recovery": recovery.as_dict()}
    if spec is not None:
        lost = ledger.get("lost") if ledger else None
        entry["verdict"] = judge(recovery, spec.within, lost, spec.lossless, ran.ok).as_dict()
    return entry


def failover_line(entry: dict[str, Any]) -> str:
    """One line per judged trial, for the progress display and the events."""
    r = entry["recovery"]
    count = len(r["databases"])
    group = f"group writable after {r['group_s']:.2f} s; " if r["group_s"] is not None else ""
    spread = (
        f"databases back p50 {r['p50_s']:.1f} s, p95 {r['p95_s']:.1f} s, max {r['max_s']:.1f} s"
        if r["max_s"] is not None
        else "no database came back"
    )
    missing = f"; {len(r['not_recovered'])} of {count} not back by the end" if r["not_recovered"] else ""
    verdict = entry.get("verdict")
    judged = (
        ""
        if verdict is None
        else "; success"
        if verdict["success"]
        else "; failed: " + "; ".join(verdict["reasons"])
    )
    return (
        f"{entry['action']}: {group}{spread} (± {r['resolution_s']:g} s, {count} databases){missing}{judged}"
    )
