"""Actions during a trial, on their own clock: an action still running when the load ends on time
is let finish (a switchover cut off while its old primary rejoins would leave the pair broken),
one running when the trial is interrupted is killed, and one not yet due never runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

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
