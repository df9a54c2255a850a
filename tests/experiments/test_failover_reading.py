"""A failover trial read after it ends, without a database (no ledger): each action's recovery
noted, recorded as an event and stored; with a PostgreSQL target the first action read per
database and judged. One numbering: what is stored is the trial's 0-based place in its cell, what
is shown counts from 1."""

from __future__ import annotations

from pathlib import Path

from caplab.engine import GeneratorFigures, IntervalSnapshot, LatencySummary, RunResult
from caplab.experiments.actions import ActionOutcome
from caplab.experiments.base import TrialRecord
from caplab.experiments.failover import FailoverReading
from caplab.spec import PostgresTargetSpec, RecoverySpec

NONE = LatencySummary(0, None, None, None, None, None, None, None)
URL = "postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/ag_0?target_session_attrs=read-write"


def trial() -> TrialRecord:
    """2 s at 10 completions per 0.1 s interval, none from 0.5 s to 0.8 s (the outage)."""
    snapshots = [
        IntervalSnapshot(k, k / 10, (k + 1) / 10, False, 10, 0 if 5 <= k < 8 else 10, 0, 0, 0, 100.0, NONE)
        for k in range(20)
    ]
    figures = GeneratorFigures(1, 0.0, None, None, None, 0.0, 1, False, None)
    result = RunResult(
        "open", 100.0, None, 2.0, 0.0, 0, 0, 0, 0, 0, 0.0, NONE, NONE, {},
        snapshots, figures, None, False, {},
    )  # fmt: skip
    return TrialRecord(result)


SWITCHOVER = ActionOutcome("switchover", "true", 0.5, started_s=0.5, ended_s=0.6, exit_code=0)


def reading(postgres: PostgresTargetSpec | None, notes: list[str], events: list[str]) -> FailoverReading:
    return FailoverReading(postgres, RecoverySpec(within=1.0), Path("."), notes.append, events.append)


def test_each_action_is_noted_recorded_and_stored_under_its_place_in_the_cell() -> None:
    notes: list[str] = []
    events: list[str] = []
    entries = reading(None, notes, events).read(trial(), [SWITCHOVER], 2)
    assert list(entries) == ["recovery"], "no PostgreSQL target: no ledger, no per-database reading"
    [recovered] = entries["recovery"]
    assert recovered["trial"] == 2 and recovered["action"]["name"] == "switchover"
    assert notes == [f"trial 3: {events[0]}"]


def test_the_failover_entry_is_numbered_as_the_recovery_entry() -> None:
    notes: list[str] = []
    entries = reading(PostgresTargetSpec(url=URL), notes, []).read(trial(), [SWITCHOVER], 0)
    [recovered], [judged] = entries["recovery"], entries["failover"]
    assert recovered["trial"] == judged["trial"] == 0
    assert judged["verdict"]["success"], judged
    assert [n.split(":")[0] for n in notes] == ["trial 1", "trial 1"]


def test_a_trial_without_actions_adds_nothing_without_a_ledger() -> None:
    assert reading(PostgresTargetSpec(url=URL), [], []).read(trial(), [], 4) == {}
