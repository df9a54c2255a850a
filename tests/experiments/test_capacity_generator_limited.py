"""A generator starved of CPU must never be mistaken for the system's limit.

knownserver answers in microseconds (no work per request), so a 2 ms p99 is easy for it. The
generator runs in a cgroup with a small CPU quota: its sends leave late by a good part of those
2 ms, so its trials fail. The search must say that the generator limited it (capacity is at least
what passed, or unknown), and name the generator, never the server, as the limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, Profile, check_support
from caplab.systems.process import RunningServer
from support.studies import CAPLAB, write_study

pytestmark = pytest.mark.slow  # a whole search under a CPU quota

STARVED = Profile.build("generator", cpus=0.15)


def test_a_starved_generator_is_named_as_the_limit_not_the_server(
    plain_server: RunningServer, tmp_path: Path
) -> None:
    missing = check_support([STARVED])
    if missing:
        pytest.skip("; ".join(missing))
    with CellHardware(tmp_path, {"generator": STARVED}) as hardware:
        command = [
            *hardware.launch_prefix("generator"),
            sys.executable, "-m", "caplab", "find-capacity", f"http://{plain_server.address}/",
            "--slo", "p99<=2ms", "--sut-pid", str(plain_server.process.pid), "--threads", "1",
            "--start", "1000", "--max", "4000", "--trial", "1s", "--confirm", "1s", "--repeats", "1",
            "--warmup", "500ms", "--json",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert answer["found"] is False and answer["generator_saturated"] is True
    assert answer["capacity_rps"] is None
    assert answer["limit"]["kind"] == "generator", answer["limit"]
    assert "server" not in answer["limit"]["summary"]
    # Where it stops depends on how often the quota bites; that it names the generator does not.
    assert "the generator was the limit at" in answer["message"], answer["message"]
    floor = answer["capacity_at_least"]
    assert floor is None or answer["message"].startswith(
        f"capacity ≥ {floor:,.0f}/s (the generator's limit here)"
    )


def test_a_study_cell_stopped_by_the_generator_completes_as_inconclusive(
    plain_server: RunningServer, tmp_path: Path
) -> None:
    """The same starved generator in a study with replicates: the cell is not failed — it completes
    with "capacity ≥ X (the generator's limit here)" (or none measured) carried across its
    replicates, the generator as its limit, and the report says so."""
    missing = check_support([STARVED])
    if missing:
        pytest.skip("; ".join(missing))
    study = {
        "name": "starved-generator",
        "target": {"http": {"url": f"http://{plain_server.address}/"}},
        "factors": {"copy": ["a"]},
        "load": {"duration": "1s", "warmup": "500ms", "threads": 1},
        "slo": ["p99<=2ms"],
        "search": {"precision": "20%", "trial": "1s", "repeats": 1, "start": 200, "max": 4000},
        "replicates": 2,
    }
    path = write_study(tmp_path / "study.yaml", study)
    with CellHardware(tmp_path / "hw", {"generator": STARVED}) as hardware:
        command = [
            *hardware.launch_prefix("generator"), str(CAPLAB), "run", str(path),
            "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "-o", str(tmp_path / "report"),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    [cell] = json.loads(done.stdout)["cells"]
    assert cell["status"] == "complete"
    capacity = cell["metrics"]["capacity"]
    assert capacity["found"] is False and capacity["generator_saturated"] is True
    assert capacity["replicate_count"] == 2 and all(r["generator_saturated"] for r in capacity["replicates"])
    assert cell["metrics"]["limit"]["kind"] == "generator"
    floor = capacity["capacity_at_least"]
    shown = f"capacity ≥ {floor:,.0f}/s (the generator's limit here)" if floor else "no capacity measured"
    assert capacity["message"].startswith(shown), capacity["message"]
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["cells"][0]["limit"]["resource"] == "generator"
    assert results["cells"][0]["metrics"]["capacity"]["at_least"] == floor
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "server" not in results["cells"][0]["limit"]["summary"]
    assert (f"≥ {floor:,.0f}/s (the generator's limit here)" if floor else "not found") in markdown
