"""A failover trial read after it ends, without a database (no ledger): each action's recovery
noted, recorded as an event and stored; with a PostgreSQL target the first action read per
database and judged. One numbering: what is stored is the trial's 0-based place in its cell, what
is shown counts from 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.analysis.phases import ManagerPhases
from caplab.engine import GeneratorFigures, IntervalSnapshot, LatencySummary, RunResult
from caplab.experiments.actions import ActionOutcome
from caplab.experiments.base import TrialRecord
from caplab.experiments.failover import FailoverReading
from caplab.spec import PostgresTargetSpec, RecoverySpec

NONE = LatencySummary(0, None, None, None, None, None, None, None)
URL = "postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/ag_0?target_session_attrs=read-write"


def trial(failing: bool = False, interrupted: bool = False) -> TrialRecord:
    """2 s at 10 completions per 0.1 s interval, none from 0.5 s to 0.8 s (the outage; ``failing``:
    its requests fail, as a killed primary's do, rather than wait; ``interrupted``: stopped by
    Ctrl-C)."""
    snapshots = [
        IntervalSnapshot(
            k, k / 10, (k + 1) / 10, False, 10, 0 if 5 <= k < 8 else 10, 10 if failing and 5 <= k < 8 else 0,
            0, 0, 100.0, NONE,
        )
        for k in range(20)
    ]  # fmt: skip
    figures = GeneratorFigures(1, 0.0, None, None, None, 0.0, 1, False, None)
    result = RunResult(
        "open", 100.0, None, 2.0, 0.0, 0, 0, 0, 0, 0, 0.0, NONE, NONE, {},
        snapshots, figures, None, interrupted, {},
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


def test_an_interrupted_trial_is_read_but_not_judged() -> None:
    """Ctrl-C stopped the action and the clients: no verdict (a "failed" would blame the system)."""
    notes: list[str] = []
    interrupted = ActionOutcome("switchover", "true", 0.5, started_s=0.5, ended_s=0.6, exit_code=-2)
    entries = reading(PostgresTargetSpec(url=URL), notes, []).read(trial(interrupted=True), [interrupted], 0)
    [judged] = entries["failover"]
    assert "verdict" not in judged and judged["recovery"]["databases"]
    assert notes[-1].endswith("; interrupted, not judged") and "failed" not in notes[-1], notes[-1]


def test_a_trial_without_actions_adds_nothing_without_a_ledger() -> None:
    assert reading(PostgresTargetSpec(url=URL), [], []).read(trial(), [], 4) == {}


def test_a_killed_primarys_phases_are_read_from_its_own_fault_beside_the_databases() -> None:
    """The action started at 0.3 s and killed at 0.5 s (its own clock, 1000.2 s after the epoch it
    started at 1000.0 s); the outage (0.5-0.8 s) is read from the kill, and the manager's writable at
    0.3 s after it agrees with the first commit in the interval from 0.8 s."""
    phases = ManagerPhases.from_report(
        {"phases": {"at": {"fault": 1000.2, "detected": 1000.4, "elected": 1000.42, "promoted": 1000.47,
                           "writable": 1000.5}, "resolution_s": 0.02, "set_by": {"detected": "ttl"}}}
    )  # fmt: skip
    killed = ActionOutcome(
        "kill-primary", "true", 0.3, started_s=0.3, ended_s=0.9, exit_code=0, started_at=1000.0, phases=phases
    )
    notes: list[str] = []
    entries = reading(PostgresTargetSpec(url=URL), notes, []).read(trial(failing=True), [killed], 0)
    [recovered], [judged] = entries["recovery"], entries["failover"]
    assert recovered["load"]["fault_s"] == pytest.approx(0.5) == judged["recovery"]["fault_s"]
    p = judged["phases"]
    assert p["writable_s"] == pytest.approx(0.3) and p["first_commit_s"] == pytest.approx(0.3)
    assert p["load_back_s"] == pytest.approx(recovered["load"]["recovery_s"])
    assert "phases after the fault: detected 0.20 s" in notes[-1] and "disagree" not in notes[-1]
    early = ActionOutcome(
        "kill-primary", "true", 0.3, started_s=0.3, exit_code=0, started_at=999.5, phases=phases
    )
    late = reading(PostgresTargetSpec(url=URL), notes, []).read(trial(failing=True), [early], 1)
    assert late["failover"][0]["phases"]["fault_s"] == pytest.approx(1.0)
    # a fault said to come after the outage: the clients were back before the manager's writable
    assert "the two readings disagree" in notes[-1], notes[-1]


def test_no_database_is_back_before_the_manager_says_the_old_leader_was_gone() -> None:
    """The leader gone 0.65 s after the fault (at 1.15 s on the trial's clock): the commits from
    0.8 s were the old leader's, and each database is read back from the interval that ends after
    it, 1.1–1.2 s."""
    phases = ManagerPhases.from_report(
        {"phases": {"at": {"fault": 1000.2, "detected": 1000.85, "elected": 1000.86, "promoted": 1000.87,
                           "writable": 1000.9}, "resolution_s": 0.02}}
    )  # fmt: skip
    asked = ActionOutcome(
        "switchover", "true", 0.3, started_s=0.3, ended_s=0.9, exit_code=0, started_at=1000.0, phases=phases
    )
    entries = reading(PostgresTargetSpec(url=URL), [], []).read(trial(failing=True), [asked], 0)
    [judged] = entries["failover"]
    assert judged["recovery"]["fault_s"] == pytest.approx(0.5)
    assert judged["recovery"]["max_s"] == pytest.approx(0.6)
