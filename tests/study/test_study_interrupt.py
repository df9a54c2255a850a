"""SIGINT in the middle of a study keeps the finished cells and exits 130; `caplab run --resume`
then completes the same study without running the finished cells again."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from caplab.store import Store
from caplab.systems.process import RunningServer
from support.servers import default_sigint
from support.studies import (
    CAPLAB,
    RUN_TIMEOUT_S,
    caplab,
    free_port,
    json_out,
    knownserver,
    listening,
    write_study,
)

pytestmark = pytest.mark.slow  # whole studies, end to end

CELLS = 3
INTO_SECOND_CELL_S = 0.6
"""How long after the first cell completes to interrupt: inside the second cell (its SUT takes a
few tenths of a second to start and its trial 1.5 s)."""


def _lines(stream: IO[str], into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


@dataclass
class Setup:
    path: Path
    db_url: str
    port: int


@pytest.fixture
def setup(tmp_path: Path, db_url: str) -> Setup:
    port = free_port()
    study = {
        "name": "interrupted",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {"start": knownserver(port, "--cpu-us", "{cpu}"), "ready": {"port": port, "timeout": "20s"}},
        "factors": {"cpu": [0, 100, 200]},
        "load": {"rate": 50, "duration": "1500ms"},
    }
    return Setup(write_study(tmp_path / "study.yaml", study), db_url, port)


@pytest.fixture
def running(setup: Setup) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [str(CAPLAB), "run", str(setup.path), "--db", setup.db_url],
        cwd=setup.path.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)


def interrupt_in_second_cell(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[str, str]:
    """Waits for the first cell to complete, sends ``sig`` a little later; returns stdout, stderr."""
    assert proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line is None:
            pytest.fail(f"caplab ended before the first cell completed: {''.join(seen)}")
        seen.append(line)
        if line.startswith(f"cell 1/{CELLS}") and "complete" in line:
            break
    time.sleep(INTO_SECOND_CELL_S)
    assert proc.poll() is None, "caplab ended before it could be interrupted"
    proc.send_signal(sig)
    stdout = proc.stdout.read()
    proc.wait(timeout=30)
    reader.join(timeout=10)
    while (line := lines.get_nowait()) is not None:
        seen.append(line)
    return stdout, "".join(seen)


@pytest.mark.slow
def test_sigint_keeps_finished_cells_and_resume_completes_the_study(
    setup: Setup, running: subprocess.Popen[str]
) -> None:
    stdout, stderr = interrupt_in_second_cell(running)
    assert running.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "--resume" in stderr  # tells the user how to continue
    assert not listening(setup.port)  # the second cell's SUT was stopped

    with Store(setup.db_url) as store:
        [row] = store.list_studies()
        assert row.status == "interrupted"
        cells = store.cells(row.id)
        assert [c.status for c in cells] == ["complete", "interrupted", "pending"]
        assert cells[0].metrics is not None and cells[0].metrics["trials"] == 1
        first_trials = [
            (t["trial_id"], t["started_at"]) for t in store.trial_rows(row.id) if t["cell_index"] == 0
        ]
        assert len(first_trials) == 1
        events = [e["kind"] for e in store.events(row.id)]
        assert "interrupted" in events
    assert f"stored as study {row.id}" in stdout

    resumed = caplab("run", setup.path, "--db", setup.db_url, "--json", "--no-report", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"cell 1/{CELLS} cpu=0: complete, skipped" in resumed.stderr
    doc = json_out(resumed)
    assert doc["study"]["id"] == row.id
    assert doc["study"]["status"] == "complete"
    assert [c["status"] for c in doc["cells"]] == ["complete"] * CELLS
    assert [len(c["trials"]) for c in doc["cells"]] == [1] * CELLS
    assert all(t["trial"]["status"] == "complete" for c in doc["cells"] for t in c["trials"])

    with Store(setup.db_url) as store:
        assert [r.id for r in store.list_studies()] == [row.id]  # no second study
        trials = store.trial_rows(row.id)
        assert [(t["trial_id"], t["started_at"]) for t in trials if t["cell_index"] == 0] == first_trials
        assert sorted(t["cell_index"] for t in trials) == [0, 1, 2]
        events = [e["kind"] for e in store.events(row.id)]
        assert events.index("interrupted") < events.index("resumed")

    listed = caplab("ls", "--db", setup.db_url, "--json", timeout=30)
    assert listed.returncode == 0, listed.stderr
    [entry] = json_out(listed)
    assert (entry["id"], entry["status"], entry["cells_complete"], entry["cells_total"]) == (
        row.id,
        "complete",
        CELLS,
        CELLS,
    )
    shown = caplab("show", "latest", "--db", setup.db_url, "--json", timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert json_out(shown)["cells"] == doc["cells"]


@pytest.mark.slow
def test_sigterm_stops_as_ctrl_c_does(setup: Setup, running: subprocess.Popen[str]) -> None:
    """``kill`` (a CI timeout, a scheduler): the finished cell kept, the SUT stopped, exit 130."""
    _, stderr = interrupt_in_second_cell(running, signal.SIGTERM)
    assert running.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    assert not listening(setup.port)
    with Store(setup.db_url) as store:
        [row] = store.list_studies()
        assert [c.status for c in store.cells(row.id)] == ["complete", "interrupted", "pending"]


def test_resume_with_nothing_to_resume_starts_a_new_study(
    tmp_path: Path, db_url: str, plain_server: RunningServer
) -> None:
    study = {
        "name": "already-done",
        "target": {"http": {"url": f"http://{plain_server.address}/"}},
        "load": {"rate": 20, "duration": "300ms"},
    }
    path = write_study(tmp_path / "study.yaml", study)
    first = caplab("run", path, "--db", db_url, "--json", "--no-report")
    assert first.returncode == 0, first.stderr
    # Only an unfinished study with the same spec is resumed; a complete one is run afresh.
    again = caplab("run", path, "--db", db_url, "--json", "--no-report", "--resume")
    assert again.returncode == 0, again.stderr
    assert "already complete" not in again.stderr
    assert json_out(again)["study"]["id"] == json_out(first)["study"]["id"] + 1


@pytest.mark.slow
def test_a_second_ctrl_c_waits_for_the_system_to_stop(tmp_path: Path, db_url: str) -> None:
    """Ctrl-C pressed again while the SUT's stop command runs (a large cluster takes minutes) is held
    until the system has stopped, then delivered: the stop command finishes, the server is gone,
    exit 130. Sent to caplab's process group, as a terminal sends it, so the stop command would
    get it too if it ran in caplab's group."""
    port = free_port()
    stopping, stopped = tmp_path / "stopping", tmp_path / "stopped"
    study = {
        "name": "slow-stop",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": knownserver(port),
            "stop": f"touch {stopping} && sleep 1.5 && touch {stopped}",
            "ready": {"port": port, "timeout": "20s"},
        },
        "load": {"rate": 20, "duration": "20s"},
    }
    path = write_study(tmp_path / "study.yaml", study)
    proc = subprocess.Popen(
        [str(CAPLAB), "run", str(path), "--db", db_url, "--no-report"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not listening(port) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)  # into the trial
        os.killpg(proc.pid, signal.SIGINT)
        while not stopping.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert stopping.exists(), "the stop command never ran"
        os.killpg(proc.pid, signal.SIGINT)  # the second Ctrl-C, while the stop command sleeps
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
    assert stopped.exists(), "the second Ctrl-C cut the stop command short"
    assert not listening(port), "the server was left running"
