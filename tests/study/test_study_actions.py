"""Actions during a trial, against a real server: the server is frozen (SIGSTOP) for one second
in the middle of a fixed load and thawed (SIGCONT). The answer is known by construction — about
one second with no completion, then the held requests drain and the load is back — so the
recovery caplab reads from its interval series is checked against it, and the action itself is
kept as an event of the study."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.studies import caplab, free_port, json_out, knownserver, write_study

pytestmark = pytest.mark.slow  # a study of one four-second trial

PAUSE_S = 1.0


def study(port: int, actions: list[dict[str, str]]) -> dict[str, object]:
    # k[n]ownserver: the pattern must not match the shell that runs the action (its own command
    # line holds the pattern's text).
    frozen = f"'k[n]ownserver --port {port}'"
    return {
        "name": "freeze",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": f"exec {knownserver(port)}",
            "ready": {"port": port, "timeout": "20s"},
            "actions": {"freeze": f"pkill -STOP -f {frozen}; sleep {PAUSE_S}; pkill -CONT -f {frozen}"},
        },
        "load": {"rate": 200, "duration": "4s", "warmup": "500ms", "interval": "100ms"},
        "actions": actions,
    }


def test_a_frozen_server_is_seen_down_for_the_pause_then_recovered(tmp_path: Path) -> None:
    port = free_port()
    path = write_study(tmp_path / "s.yaml", study(port, [{"at": "2s", "do": "freeze"}]))
    db = f"sqlite:///{tmp_path / 'c.db'}"
    done = caplab("run", path, "--db", db, "--json", "-o", tmp_path / "r", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    cell = json_out(done)["cells"][0]
    [entry] = cell["metrics"]["recovery"]
    action, load = entry["action"], entry["load"]
    assert action["name"] == "freeze" and action["exit_code"] == 0 and not action["timed_out"]
    assert action["started_s"] == pytest.approx(2.0, abs=0.1)
    assert action["ended_s"] - action["started_s"] == pytest.approx(PAUSE_S, abs=0.2)
    # No reply for the pause (± one 100 ms interval at each end), none failed (they only waited),
    # and back to the offered 200/s: a frozen server loses time, not requests.
    assert load["disrupted"]
    assert load["unavailable_s"] == pytest.approx(PAUSE_S, abs=0.25)
    assert PAUSE_S - 0.25 <= load["recovery_s"] <= PAUSE_S + 0.5
    assert load["failed"] == 0 and cell["metrics"]["errors"] == 0
    assert load["before_rps"] == pytest.approx(200, rel=0.1)
    assert load["after_ratio"] == pytest.approx(1.0, abs=0.15)
    assert "trial 1: freeze at 2.0" in done.stderr and "recovered after" in done.stderr
    events = caplab("show", "1", "--db", db, "--json")
    assert "freeze at 2." in events.stdout
    markdown = (tmp_path / "r" / "report.md").read_text()
    # The row's "at" is the action's start on the load's clock, as the JSON's: 2, or 1.97 or 2.03
    # when the machine was busy.
    assert ". Recovery\n" in markdown
    assert re.search(r"\| freeze \| (1\.9\d*|2|2\.0\d*) \| ", markdown), markdown


def test_a_failing_action_is_reported_and_the_trial_still_measured(tmp_path: Path) -> None:
    """Twice, as replicates: each replicate's action is its own trial of the cell, numbered across
    them (the report's rows, and a ledger's, are matched to their trial by that number)."""
    port = free_port()
    actions = [{"at": "1s", "run": "echo 'no such node' >&2; exit 3", "name": "promote"}]
    path = write_study(tmp_path / "s.yaml", study(port, actions) | {"replicates": 2})
    done = caplab("run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "--no-report", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    cell = json_out(done)["cells"][0]
    entries = cell["metrics"]["recovery"]
    assert [e["trial"] for e in entries] == [0, 1]
    for entry in entries:
        assert entry["action"]["exit_code"] == 3 and entry["action"]["output"] == "no such node"
        assert not entry["load"]["disrupted"], "nothing happened to the server"
    assert "promote at 1.0" in done.stderr and "exited 3" in done.stderr and "no such node" in done.stderr
    assert "trial 2: promote at 1.0" in done.stderr
    assert cell["metrics"]["sent"] >= 2 * 700
