"""A failover trial read, in one place for the study and `caplab failover`: each action's outcome
and the load's recovery from it, each database's recovery from the fault (from the per-target
interval series), the ledger counted database by database, and the trial judged against the
recovery SLO — what a cell's k/K is made of.

Every stored ``trial`` (in the recovery, ledger and failover entries) is the trial's 0-based place
in its cell, across the cell's replicates; whatever shows one to a reader adds 1 ("trial 1")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caplab.analysis.failover import IsolatedSide, group_recovery, judge, reported_seconds
from caplab.analysis.phases import MANAGER_PHASES, Timeline, timeline
from caplab.analysis.recovery import Interval
from caplab.engine import RunResult
from caplab.experiments.actions import ActionOutcome, recoveries, recovery_text
from caplab.experiments.base import TrialRecord
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
    urls: list[str], passfile: Path | None, series: dict[str, list[Interval]], index: int
) -> dict[str, Any]:
    """What the trial acknowledged against what each database (one per URL) holds now, every
    ledger emptied for the next trial. Lost is counted database by database: a surplus on one (a
    commit whose acknowledgement the failure swallowed) hides no loss on another. Raises
    DatabaseProblem when a ledger cannot be read."""
    acknowledged = held = lost = 0
    lost_in: list[str] = []
    for url in urls:
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
    load_back_s: float | None = None,
) -> dict[str, Any] | None:
    """The trial's first action that ran, read per database from its fault and judged: ``{"trial",
    "action", "recovery": GroupRecovery, "phases": Timeline, "verdict"}`` (phases where the action
    reported its HA manager's, no verdict without a recovery SLO); None when no action ran.
    ``trial`` is the trial's 0-based place in its cell; ``load_back_s``, the load's recovery from
    the same fault (the timeline's last phase)."""
    ran = next((o for o in outcomes if o.started_s is not None), None)
    if ran is None or ran.fault_s is None:
        return None
    gone = ran.phases.after_fault().get("detected") if ran.phases is not None else None
    leader_gone_s = ran.fault_s + gone if gone is not None else None
    recovery = group_recovery(series, ran.fault_s, reported_seconds(ran.reported), leader_gone_s)
    entry: dict[str, Any] = {"trial": trial, "action": ran.name, "recovery": recovery.as_dict()}
    isolated = IsolatedSide.from_reported(ran.reported)
    if isolated is not None:
        entry["isolated"] = isolated.as_dict()
    if ran.phases is not None:
        back = [d.recovery_s for d in recovery.databases if d.recovery_s is not None]
        entry["phases"] = timeline(
            ran.phases, ran.fault_s, back, load_back_s, recovery.resolution_s
        ).as_dict()
    if spec is not None:
        lost = ledger.get("lost") if ledger else None
        entry["verdict"] = judge(recovery, spec.within, lost, spec.lossless, ran.ok, isolated).as_dict()
    return entry


def load_back(recovered: list[dict[str, Any]]) -> float | None:
    """The load's recovery from the first action that ran (``recoveries``' entries), from its fault."""
    load = next((e["load"] for e in recovered if "load" in e), None)
    value = load.get("recovery_s") if load else None
    return float(value) if isinstance(value, int | float) else None


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
    phases = f"; {phases_line(Timeline.from_dict(entry['phases']))}" if "phases" in entry else ""
    return (
        f"{entry['action']}: {group}{spread} (± {r['resolution_s']:.2g} s, {count} databases){missing}"
        f"{phases}{isolated_line(entry.get('isolated'))}{judged}"
    )


def isolated_line(isolated: dict[str, Any] | None) -> str:
    """``; isolated side: demoted after 4.2 s, 0 writes taken while another led, 0 lost``."""
    if isolated is None:
        return ""
    demoted = isolated.get("demoted_after_s")
    when = f"demoted after {demoted:.1f} s" if demoted is not None else "never demoted"
    return (
        f"; isolated side: {when}, {isolated['split_brain_writes']:,} write(s) taken while another led, "
        f"{isolated['lost']:,} acknowledged lost"
    )


def phases_line(t: Timeline) -> str:
    """The phases after the fault in words: ``detected 4.61 s, elected 4.62 s, …``."""
    shown = [
        f"{name.replace('_', ' ')} {value:.2f} s"
        for name in (*MANAGER_PHASES, "first_commit", "load_back")
        if (value := t.at(name)) is not None
    ]
    if not shown:
        return "no phases seen"
    doubts = [] if t.ordered() else ["out of order: a clock stepped, or a phase was missed"]
    if t.agrees() is False:
        doubts.append("the clients committed before writable: the two readings disagree")
    return "phases after the fault: " + ", ".join(shown) + "".join(f" ({d})" for d in doubts)


def ledger_line(entry: dict[str, Any]) -> str:
    """The ledger in words, for the progress display and `caplab failover`."""
    return (
        f"ledger: {entry['acknowledged']:,} transactions acknowledged, "
        f"{entry['held']:,} held, {entry['lost']:,} lost"
    )


@dataclass(frozen=True)
class FailoverReading:
    """What a study's cell makes of each trial once it has ended: each action's outcome (noted and
    recorded as an event) with the load's recovery from it; with a PostgreSQL target, the ledger
    (when it has one) and the first action read database by database and judged. ``read`` returns
    the entries by the cell metrics' keys (``recovery``, ``ledger``, ``failover``), for the runner
    to store."""

    postgres: PostgresTargetSpec | None
    recovery: RecoverySpec | None
    directory: Path
    """The study's directory: a target's passfile is named relative to it."""
    note: Callable[[str], object]
    """Shows a progress line."""
    event: Callable[[str], object]
    """Records an action's outcome as one of the cell's events."""

    def read(
        self, record: TrialRecord, outcomes: list[ActionOutcome], index: int
    ) -> dict[str, list[dict[str, Any]]]:
        """The trial at 0-based ``index`` in its cell (across its replicates), its actions'
        ``outcomes`` (none for a trial without actions): the entries it adds to the cell."""
        entries = {"recovery": self._recovered(record, outcomes, index)}
        if self.postgres is not None:
            series = database_series(record.result, self.postgres.urls()[0])
            ledger = self._ledger(self.postgres, series, index)
            back = load_back(entries["recovery"])
            # An interrupted trial stopped its action and its clients mid-way: read, not judged.
            cut = record.result.interrupted
            judged = judged_failover(None if cut else self.recovery, series, outcomes, ledger, index, back)
            if judged is not None:
                after = "; interrupted, not judged" if cut and self.recovery is not None else ""
                self.note(f"trial {index + 1}: {failover_line(judged)}{after}")
            entries |= {"ledger": [ledger] if ledger else [], "failover": [judged] if judged else []}
        return {key: found for key, found in entries.items() if found}

    def _recovered(
        self, record: TrialRecord, outcomes: list[ActionOutcome], index: int
    ) -> list[dict[str, Any]]:
        """Each action's outcome as an event, and the load's recovery from it."""
        entries = []
        for outcome, entry in zip(outcomes, recoveries(record.result, outcomes), strict=True):
            line = recovery_text(outcome, entry)
            self.note(f"trial {index + 1}: {line}")
            self.event(line)
            entries.append({"trial": index} | entry)
        return entries

    def _ledger(
        self, pg: PostgresTargetSpec, series: dict[str, list[Interval]], index: int
    ) -> dict[str, Any] | None:
        """With a ledger, what the trial acknowledged against what the databases hold now: the
        acknowledged transactions a failover lost, measured (a commit whose acknowledgement the
        failure swallowed is held but not counted as acknowledged, so ``lost`` is a lower bound)."""
        if not pg.ledger:
            return None
        passfile = self.directory / pg.passfile if pg.passfile else None
        entry = ledger_entry(pg.urls(), passfile, series, index)
        self.note(f"trial {index + 1}: {ledger_line(entry)}")
        return entry
