"""A study whose trials run on load agents (`cluster:`/`agents:`): the same runner, each trial's plan
split across the agents of a local Ray and the results merged — what the server counted is what
the merged trial says was completed."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.systems.knownserver import served_requests
from caplab.systems.process import start_module
from support.studies import caplab, free_port, json_out, write_study

RATE = 200.0


@pytest.mark.slow  # a local Ray is started for the study (several seconds)
def test_a_study_on_two_agents_merges_its_trial_and_the_server_counted_as_much(tmp_path: Path) -> None:
    port = free_port()
    study = {
        "name": "counted",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "load": {"rate": RATE, "duration": "1s", "warmup": "0s"},
        "cluster": "local",
        "agents": 2,
    }
    with start_module("caplab.systems.knownserver", "--port", str(port), "--cpu-us", "0") as server:
        done = caplab(
            "run", write_study(tmp_path / "s.yaml", study), "--db", f"sqlite:///{tmp_path / 'c.db'}"
        )
        assert done.returncode == 0, done.stderr[-3000:]
        served = served_requests(server.host, server.port)
    shown = json_out(caplab("show", "1", "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json"))
    [trial] = shown["cells"][0]["trials"]
    assert trial["completed"] == served, "every completed request was served, and only those"
    assert trial["completed"] == pytest.approx(RATE * 1, rel=0.02) and trial["errors"] == 0, trial


@pytest.mark.slow
def test_agents_without_a_cluster_is_a_bad_study_file(tmp_path: Path) -> None:
    study = {
        "name": "bad",
        "target": {"http": {"url": "http://127.0.0.1:9/"}},
        "load": {"rate": 10, "duration": "1s"},
        "agents": 2,
    }
    done = caplab("run", write_study(tmp_path / "s.yaml", study), "--db", f"sqlite:///{tmp_path / 'c.db'}")
    assert done.returncode == 2, done.stderr
    assert "s.yaml:" in done.stderr and "agents: needs cluster:" in done.stderr
    assert "Traceback" not in done.stderr
