"""Actions during a trial, on their own clock: an action still running when the load ends on time
is let finish (a switchover cut off while its old primary rejoins would leave the pair broken),
one running when the trial is interrupted is killed, and one not yet due never runs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from caplab.engine import IntervalSnapshot, LatencySummary
from caplab.experiments.actions import TrialActions, reported_numbers
from caplab.spec import ActionSpec


def _started(tmp_path: Path, *actions: ActionSpec) -> TrialActions:
    timed = TrialActions(list(actions), {}, tmp_path)
    timed.start()
    return timed


def _wait_running(timed: TrialActions) -> None:
    deadline = time.monotonic() + 10
    while timed.outcomes[0].started_s is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert timed.outcomes[0].started_s is not None


def test_an_action_running_when_the_load_ends_is_let_finish(tmp_path: Path) -> None:
    timed = _started(tmp_path, ActionSpec(at=0, run="sleep 0.3; echo done > finished"))
    _wait_running(timed)
    [outcome] = timed.stop()
    assert outcome.exit_code == 0 and not outcome.timed_out, outcome
    assert (tmp_path / "finished").read_text().strip() == "done"


def test_an_interrupted_trial_kills_its_running_action(tmp_path: Path) -> None:
    timed = _started(tmp_path, ActionSpec(at=0, run="sleep 30; echo done > finished"))
    _wait_running(timed)
    [outcome] = timed.stop(finish_running=False)
    assert outcome.exit_code == -9, outcome
    assert not (tmp_path / "finished").exists()


def test_an_action_not_yet_due_never_runs(tmp_path: Path) -> None:
    timed = _started(tmp_path, ActionSpec(at=60, run="echo ran > ran"))
    [outcome] = timed.stop()
    assert outcome.started_s is None and outcome.exit_code is None
    assert not (tmp_path / "ran").exists()


def test_the_numbers_an_action_printed_as_json_are_kept_though_its_output_is_cut_short(
    tmp_path: Path,
) -> None:
    # pgpair prints its role change indented over more lines than an outcome keeps.
    printed = json.dumps(
        {"action": "switchover", "writable_after_s": 0.42, "a": 1, "b": 2, "c": 3, "d": 4}, indent=2
    )
    (tmp_path / "change.json").write_text("promoting node1\n" + printed + "\n")
    timed = _started(tmp_path, ActionSpec(at=0, run="cat change.json"))
    _wait_running(timed)
    [outcome] = timed.stop()
    assert "writable_after_s" not in outcome.output, "the kept output is its last lines only"
    assert outcome.reported == {"writable_after_s": 0.42, "a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    assert reported_numbers("no json here\n") == {}


def test_an_actions_times_are_on_the_loads_clock_which_starts_after_the_schedule(tmp_path: Path) -> None:
    """The engine's clock starts a moment after the actions' schedule does (0.16 s in a quick
    availability-groups trial, seconds on a busy machine): an action due 0.6 s into the load fires
    0.6 s after the load's clock began, and its times are on that clock, the one the recovery read
    from the interval series is on; the shell's own clock says when it ran."""
    timed = _started(tmp_path, ActionSpec(at=0.6, run="date +%s.%N > ran_at"))
    time.sleep(0.4)
    load_began = time.time() - 0.1  # the engine's first 100 ms interval ends now: began 0.3 s late
    # the interval as it reaches Python, its end on the load's clock
    timed.observe(IntervalSnapshot(0, 0.0, 0.1, False, 1, 1, 0, 0, 0, 10.0, LatencySummary(1, *[1.0] * 7)))
    deadline = time.monotonic() + 10
    while not (tmp_path / "ran_at").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    [outcome] = timed.stop()
    assert outcome.started_s is not None and outcome.ended_s is not None
    assert 0.6 <= outcome.started_s < 0.7, outcome
    ran_at = float((tmp_path / "ran_at").read_text()) - load_began
    assert ran_at == pytest.approx(outcome.started_s, abs=0.05), (
        "its start is when it ran, on the load's clock"
    )
    assert ran_at >= 0.6 - 0.02, "due 0.6 s into the load, not 0.6 s after the schedule began (0.3 s)"


def test_a_fault_the_action_reports_is_put_on_the_loads_clock_by_its_start(tmp_path: Path) -> None:
    """pgha's kill-primary prints its phases as epoch seconds, its fault a moment after it started
    (Python, the leader found): the fault on the load's clock is the action's start plus that moment,
    read against the wall clock taken at the instant it started."""
    script = (
        "import json, time; t = time.time() + 0.3; "
        "print(json.dumps({'phases': {'at': {'fault': t, 'detected': t + 1, 'elected': t + 1.1, "
        "'promoted': t + 1.2, 'writable': t + 1.3}, 'resolution_s': 0.02}}))"
    )
    (tmp_path / "kill.py").write_text(script)
    timed = _started(tmp_path, ActionSpec(at=0, run=f"{sys.executable} kill.py"))
    _wait_running(timed)
    [outcome] = timed.stop()
    assert outcome.ok and outcome.phases is not None and outcome.started_s is not None, outcome
    assert outcome.fault_s is not None
    # the script's own start (the interpreter's) comes before its fault: 0.3 s and a little more
    assert 0.3 <= outcome.fault_s - outcome.started_s < 0.3 + 2.0, (outcome.started_s, outcome.fault_s)
    assert outcome.phases.after_fault()["writable"] == pytest.approx(1.3)
    assert outcome.as_dict()["fault_s"] == outcome.fault_s


def test_an_action_that_reports_no_fault_struck_when_it_started(tmp_path: Path) -> None:
    timed = _started(tmp_path, ActionSpec(at=0, run="echo '{\"writable_after_s\": 1.5}'"))
    _wait_running(timed)
    [outcome] = timed.stop()
    assert outcome.phases is None and outcome.fault_s == outcome.started_s is not None
