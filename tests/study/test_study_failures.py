"""A failed cell does not stop the study: a SUT that cannot start, never becomes ready or dies
mid-trial fails its own cell, with the SUT's last output in the reason, and the other cells run.
An unreachable target fails its cell the same way; `--resume` later runs only what failed."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from caplab.store import Store
from caplab.systems.process import start_module
from support.studies import caplab, free_port, json_out, knownserver, listening, write_study

pytestmark = pytest.mark.slow  # whole studies, end to end

DIE_AFTER_S = 1.0
TRIAL_S = 2.0


@dataclass
class Ran:
    done: subprocess.CompletedProcess[str]
    doc: dict[str, Any]
    cells: dict[str, dict[str, Any]]
    """By the name of the case (the `case` factor)."""
    port: int
    db_url: str


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    tmp = tmp_path_factory.mktemp("study-failures")
    port = free_port()
    dies = (
        f"{knownserver(port)} & sleep {DIE_AFTER_S}; kill -9 $!; wait $! 2>/dev/null; "
        "echo the server was killed; exit 4"
    )
    cases = {
        "exits": ("echo about to fail; echo giving up >&2; exit 3", 1, "20s"),
        "missing": ("/no/such/program-xyz --flag", 1, "20s"),
        "never-ready": ("echo still warming up; sleep 60", 1, "1500ms"),
        "dies": (dies, 2, "20s"),
        "fine": (f"exec {knownserver(port)}", 1, "20s"),
    }
    study = {
        "name": "failing-suts",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {"start": "{start}", "ready": {"port": port, "timeout": "{ready_timeout}"}},
        "factors": {
            "zip": {
                "case": list(cases),
                "start": [c[0] for c in cases.values()],
                "repeat": [c[1] for c in cases.values()],
                "ready_timeout": [c[2] for c in cases.values()],
            }
        },
        "load": {"rate": 50, "duration": f"{TRIAL_S}s", "repeat": "{repeat}"},
    }
    path = write_study(tmp / "study.yaml", study)
    db_url = f"sqlite:///{tmp / 'caplab.db'}"
    done = caplab("run", path, "--db", db_url, "--json", "--no-report")
    doc = json_out(done)
    cells = {c["factors"]["case"]: c for c in doc["cells"]}
    return Ran(done, doc, cells, port, db_url)


def test_the_study_exits_1_and_is_marked_failed(ran: Ran) -> None:
    assert ran.done.returncode == 1, ran.done.stderr
    assert "Traceback" not in ran.done.stderr
    assert ran.doc["study"]["status"] == "failed"
    statuses = {name: c["status"] for name, c in ran.cells.items()}
    assert statuses == {
        "exits": "failed",
        "missing": "failed",
        "never-ready": "failed",
        "dies": "failed",
        "fine": "complete",
    }


def test_a_start_command_that_exits_fails_its_cell_with_its_output(ran: Ran) -> None:
    cell = ran.cells["exits"]
    assert "exited with code 3 before it was ready" in cell["error"]
    assert "about to fail" in cell["error"]
    assert "giving up" in cell["error"]  # stderr is kept as well
    assert cell["trials"] == [] and cell["metrics"] is None


def test_a_missing_program_fails_its_cell_with_the_shells_complaint(ran: Ran) -> None:
    error = ran.cells["missing"]["error"]
    assert "exited with code 127" in error
    assert "/no/such/program-xyz" in error and "not found" in error


def test_a_sut_that_never_becomes_ready_fails_its_cell_after_the_timeout(ran: Ran) -> None:
    error = ran.cells["never-ready"]["error"]
    assert f"not ready within 1.5s (TCP 127.0.0.1:{ran.port})" in error
    assert "still warming up" in error
    assert ran.cells["never-ready"]["trials"] == []


def test_a_sut_that_dies_mid_trial_fails_its_cell_and_keeps_the_trial(ran: Ran) -> None:
    cell = ran.cells["dies"]
    assert "exited with code 4 during trial 1" in cell["error"]
    assert "the server was killed" in cell["error"]
    # The trial that was running is kept; the second of its two trials never started.
    [trial] = cell["trials"]
    assert trial["trial"]["index"] == 0
    assert trial["sent"] > 0
    assert trial["errors"] > 0  # requests after the death found nothing listening
    assert trial["completed"] > 0  # and those before it were answered
    assert cell["metrics"]["trials"] == 1
    assert cell["metrics"]["sent"] == trial["sent"]


def test_the_cell_after_the_failures_completes(ran: Ran) -> None:
    cell = ran.cells["fine"]
    assert cell["error"] is None
    assert cell["metrics"]["throughput"] == pytest.approx(50, rel=0.1)
    assert len(cell["trials"]) == 1


def test_each_failure_is_an_event_and_in_the_store(ran: Ran) -> None:
    failed = [e for e in ran.doc["events"] if e["kind"] == "cell_failed"]
    assert [e["cell_index"] for e in failed] == [0, 1, 2, 3]
    assert [e["message"] for e in failed] == [c["error"] for c in ran.doc["cells"][:4]]
    with Store(ran.db_url) as store:
        study_id = ran.doc["study"]["id"]
        trials = store.trial_rows(study_id)
        assert [(t["cell_index"], t["trial_index"]) for t in trials] == [(3, 0), (4, 0)]
        assert [c.status for c in store.cells(study_id)] == ["failed"] * 4 + ["complete"]


def test_the_summary_says_which_cells_failed(ran: Ran) -> None:
    stderr = ran.done.stderr
    assert "cell 1/5" in stderr and "failed" in stderr
    assert "cell 5/5" in stderr and "complete" in stderr
    assert not listening(ran.port)


# -- an unreachable target ----------------------------------------------------------------------


def test_an_unreachable_target_fails_the_cell_and_resume_runs_it_once_it_is_up(
    tmp_path: Path, db_url: str
) -> None:
    port = free_port()
    study = {
        "name": "nothing-there",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "load": {"rate": 20, "duration": "1s"},
    }
    path = write_study(tmp_path / "study.yaml", study)
    done = caplab("run", path, "--db", db_url, "--json", "--no-report")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    doc = json_out(done)
    [cell] = doc["cells"]
    assert cell["status"] == "failed"
    assert "connection refused" in cell["error"]
    assert f"127.0.0.1:{port}" in cell["error"]
    assert cell["trials"] == []
    assert doc["study"]["status"] == "failed"

    with start_module("caplab.systems.knownserver", "--port", str(port)):
        resumed = caplab("run", path, "--db", db_url, "--json", "--no-report", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    again = json_out(resumed)
    assert again["study"]["id"] == doc["study"]["id"]
    assert again["study"]["status"] == "complete"
    [cell] = again["cells"]
    assert (cell["status"], cell["error"], len(cell["trials"])) == ("complete", None, 1)


def test_an_unreachable_tcp_target_fails_the_cell(tmp_path: Path, db_url: str) -> None:
    port = free_port()
    study = {
        "name": "nothing-there-tcp",
        "target": {"tcp": {"url": f"tcp://127.0.0.1:{port}", "framing": "line", "body": "ping"}},
        "load": {"users": 1, "duration": "1s"},
    }
    done = caplab("run", write_study(tmp_path / "study.yaml", study), "--db", db_url, "--json", "--no-report")
    assert done.returncode == 1, done.stderr
    [cell] = json_out(done)["cells"]
    assert cell["status"] == "failed"
    assert "connection refused" in cell["error"]
