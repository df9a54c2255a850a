"""`caplab run STUDY --web 0` as a browser sees it: the matrix's cells going from pending to running
to complete, the search's steps, the server role's CPU and memory, then the finished study linking
its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import live
from support.studies import free_port, knownserver, write_study

pytestmark = pytest.mark.slow  # a whole study, end to end


def searched_study(tmp_path: Path) -> Path:
    """knownserver at 2 ms of CPU per request (about 500/s on a core), searched from 100/s."""
    port = free_port()
    study = {
        "name": "live-search",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": knownserver(port, "--cpu-us", "2000"),
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port} --cpu-us"}},
        },
        "load": {"duration": "1s", "warmup": "300ms", "interval": "250ms"},
        "slo": ["p99<=200ms"],
        "search": {"precision": "50%", "trial": "1s", "repeats": 1, "start": 100, "max": 400},
    }
    return write_study(tmp_path / "study.yaml", study)


def test_a_study_streams_its_matrix_search_and_roles(caplab_cmd: list[str], tmp_path: Path) -> None:
    path = searched_study(tmp_path)
    db = f"sqlite:///{tmp_path / 'c.db'}"
    run = live.start([*caplab_cmd, "run", path, "--db", db, "-o", tmp_path / "r", "--web", "0"], cwd=tmp_path)
    try:
        run.wait_for_page()
        seen = live.until_done(run.port, timeout_s=120)
        _, err = run.finish(timeout_s=120)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert run.process.returncode == 0, err
    states = [s.data["cells"][0]["state"] for s in seen if s.name in ("snapshot", "done") and s.data["cells"]]
    assert "running" in states and states[-1] == "complete"
    steps = [e.data for e in seen if e.name == "step"]
    assert len(steps) >= 2 and steps[0]["load"] == 100 and steps[0]["unit"] == "req/s"
    intervals = [e for e in seen if e.name == "interval"]
    assert len(intervals) >= 3
    roles = intervals[-1].data["resources"]
    assert roles["role:server"]["cpu"] > 0 and roles["role:server"]["mem"] > 0
    done = seen[-1].data
    assert done["status"] == "complete" and done["report"] == "report/index.html"
    [cell] = done["cells"]
    # Whether this machine, busy or not, gave the search a capacity is not the page's to say.
    assert cell["capacity"]["unit"] == "req/s" and cell["link"] == "report/index.html#results"
    assert [s["n"] for s in done["steps"]] == list(range(1, len(steps) + 1))
