"""`caplab run` end to end: a study that starts knownserver per cell on a loopback port, drives it
at a fixed open-model rate, and stores trials, metrics and each role's resources.

The study runs once per module (about 8 s); each test checks one part of what it produced.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from caplab.store import Store
from support.studies import caplab, free_port, json_out, knownserver, listening, write_study

pytestmark = pytest.mark.slow  # whole studies, end to end

SCHEMA = json.loads((Path(__file__).parents[1] / "schema" / "load-result.schema.json").read_text())
CPU_US = [200, 2000]
"""Per-request CPU of the two cells: at 100/s, about 2 % and 20 % of a core."""
RATE = 100.0
REPEAT = 2


@dataclass
class Ran:
    done: subprocess.CompletedProcess[str]
    doc: dict[str, Any]
    url: str
    port: int
    db_url: str


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    tmp = tmp_path_factory.mktemp("study-run")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    study = {
        "name": "cpu-cost",
        "description": "knownserver at two per-request CPU costs",
        "target": {"http": {"url": url}},
        "sut": {
            "start": knownserver(port, "--cpu-us", "{cpu}"),
            "ready": {"port": port, "timeout": "20s"},
            # The trailing option keeps port 1234 from matching a server on port 12345.
            "roles": {"server": {"match": f"knownserver --port {port} --cpu-us"}},
            "metrics": {
                "url": f"http://127.0.0.1:{port}/metrics",
                "rates": {"served_per_s": "knownserver_requests_total"},
            },
        },
        "factors": {"cpu": CPU_US},
        "load": {"rate": RATE, "duration": "1s", "warmup": "500ms", "repeat": REPEAT},
        "storage_baseline": {"runtime": "1s", "size": "4M", "jobs": 2, "depth": 4},
    }
    path = write_study(tmp / "study.yaml", study)
    db_url = f"sqlite:///{tmp / 'caplab.db'}"
    done = caplab("run", path, "--db", db_url, "--json", "--no-report", "--junit", tmp / "gate.xml")
    assert done.returncode == 0, done.stderr
    return Ran(done, json_out(done), url, port, db_url)


def test_the_study_is_complete_with_one_cell_per_factor_value(ran: Ran) -> None:
    study = ran.doc["study"]
    assert study["name"] == "cpu-cost"
    assert study["status"] == "complete"
    assert isinstance(study["id"], int)
    assert study["finished_at"] is not None
    assert [c["factors"] for c in ran.doc["cells"]] == [{"cpu": v} for v in CPU_US]
    assert [c["index"] for c in ran.doc["cells"]] == [0, 1]
    assert all(c["status"] == "complete" and c["error"] is None for c in ran.doc["cells"])


def test_progress_goes_to_stderr_and_stdout_is_only_the_document(ran: Ran) -> None:
    assert ran.done.stdout.strip().startswith("{")
    assert "Traceback" not in ran.done.stderr
    assert f"study {ran.doc['study']['id']}" in ran.done.stderr
    assert "cell 2/2 cpu=2000: complete" in ran.done.stderr
    # A line per trial stays in the log (no live view when stderr is not a terminal): its load,
    # what it carried and each role's CPU, as stored.
    lines = [line for line in ran.done.stderr.splitlines() if " fixed at " in line]
    assert len(lines) == REPEAT * len(CPU_US), ran.done.stderr
    first = ran.doc["cells"][0]["trials"][0]
    assert lines[0].startswith("cell 1/2 cpu=200 fixed at 100/s offered: ")
    assert f"{first['throughput']:,.1f}/s" in lines[0] and "errors 0" in lines[0]
    assert "cpu (of a host core) server " in lines[0]


def test_each_cell_has_its_trials_as_load_results(ran: Ran) -> None:
    for cell in ran.doc["cells"]:
        trials = cell["trials"]
        assert [t["trial"]["index"] for t in trials] == list(range(REPEAT))
        assert all(t["trial"]["kind"] == "fixed" and t["trial"]["status"] == "complete" for t in trials)
        for trial in trials:
            result = {k: v for k, v in trial.items() if k != "trial"}
            # The stored trial is `caplab load --json` without the target, which the cell already says.
            jsonschema.validate({"target": ran.url, **result}, SCHEMA)
            assert result["model"] == "open"
            assert result["offered_rate"] == pytest.approx(RATE, rel=0.05)
            assert (result["duration_s"], result["warmup_s"]) == (1.0, 0.5)
            assert result["errors"] == 0


def test_cell_metrics_summarise_the_trials(ran: Ran) -> None:
    for cell in ran.doc["cells"]:
        m, trials = cell["metrics"], cell["trials"]
        assert m["trials"] == REPEAT
        assert m["throughput"] == pytest.approx(RATE, rel=0.1)
        assert m["throughput"] == pytest.approx(sum(t["throughput"] for t in trials) / REPEAT)
        assert m["sent"] == sum(t["sent"] for t in trials)
        assert m["completed"] == sum(t["completed"] for t in trials)
        assert m["errors"] == 0 and m["error_ratio"] == 0.0
        latency = m["latency_ms"]
        assert set(latency) == {"count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}
        # Percentiles of all requests together: the merged histograms count every request once.
        assert latency["count"] == sum(t["latency_ms"]["count"] for t in trials)
        assert 0 < latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p95"] <= latency["max"]
        assert m["service_time_ms"]["p50"] <= latency["p90"]


def test_resources_are_reported_per_role_and_for_the_host(ran: Ran) -> None:
    for cell in ran.doc["cells"]:
        resources = cell["resources"]
        server = resources["server"]
        assert {"cpu_percent", "rss_mb", "read_mb_s", "write_mb_s"} <= set(server)
        assert server["cpu_percent"] > 0
        assert server["rss_mb"] > 1
        assert server["read_mb_s"] >= 0 and server["write_mb_s"] >= 0
        assert resources["host"]["cpu_percent"] > 0
        assert "generator" in resources


def test_each_cell_says_where_the_generator_and_the_system_ran(ran: Ran) -> None:
    """By default apart, where the host can (two CPUs and a cpuset controller); else why not.
    The server's role is then judged against the CPUs it may run on."""
    cores = len(os.sched_getaffinity(0))
    for cell in ran.doc["cells"]:
        placement = cell["metrics"]["placement"]
        assert placement["text"] in ran.done.stderr
        if placement["system"] is not None:
            assert placement["text"] == f"generator on CPU 0; roles on CPU{'s' if cores > 2 else ''} 1" + (
                f"-{cores - 1}" if cores > 2 else ""
            )
            assert cell["resources"]["server"]["cpus"] == cores - 1
        else:
            assert "shared the host's CPUs" in placement["text"]


def test_the_servers_cpu_follows_the_cpu_factor(ran: Ran) -> None:
    cheap, costly = (c["resources"]["server"]["cpu_percent"] for c in ran.doc["cells"])
    assert costly > cheap


def test_the_sut_is_stopped_after_the_study(ran: Ran) -> None:
    assert not listening(ran.port)


def test_the_store_holds_what_was_printed(ran: Ran) -> None:
    with Store(ran.db_url) as store:
        study_id = ran.doc["study"]["id"]
        assert store.study(study_id).status == "complete"
        assert [c.status for c in store.cells(study_id)] == ["complete", "complete"]
        rows = store.trial_rows(study_id)
        assert [(r["cell_index"], r["trial_index"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
        samples = store.resource_samples(study_id)
        assert any(s["scope"] == "role:server" and s["metric"] == "cpu_percent" for s in samples)
        stored = store.study_document(study_id)
    assert [c.to_json() for c in stored.cells] == ran.doc["cells"]
    assert (stored.study.spec or "").startswith("name: cpu-cost")
    validated = stored.study.validated
    assert validated is not None, "the study as validated is stored with it"
    load = validated["load"]
    assert isinstance(load, dict)
    assert (load["duration"], load["warmup"], load["repeat"]) == (1.0, 0.5, REPEAT), "as written"
    assert load["schedule"] == "constant", "the spec's defaults filled in"


def test_ls_and_show_read_the_study(ran: Ran) -> None:
    listed = caplab("ls", "--db", ran.db_url, "--json", timeout=30)
    assert listed.returncode == 0, listed.stderr
    [row] = json_out(listed)
    assert (row["name"], row["status"], row["cells_total"], row["cells_complete"]) == (
        "cpu-cost",
        "complete",
        2,
        2,
    )
    shown = caplab("show", "latest", "--db", ran.db_url, "--json", timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert json_out(shown)["cells"] == ran.doc["cells"]
    table = caplab("show", str(row["id"]), "--db", ran.db_url, timeout=30)
    assert table.returncode == 0, table.stderr
    assert "cpu-cost" in table.stdout and "complete" in table.stdout


def test_the_systems_own_counters_are_cell_metrics(ran: Ran) -> None:
    """knownserver counts what it served; at 100/s offered it served ~100/s in the window."""
    for cell in ran.doc["cells"]:
        served = cell["metrics"]["app"]["served_per_s"]
        assert served == pytest.approx(RATE, rel=0.15)
        assert cell["resources"]["app"]["served_per_s"] == served


def test_the_environment_names_the_disks_and_the_storage_baseline(ran: Ran) -> None:
    env = ran.doc["study"]["environment"]
    assert all({"name", "model", "size_gb", "rotational"} <= set(d) for d in env["disks"])
    baseline = env["storage_baseline"]
    assert baseline["settings"] == {"block": "8k", "jobs": 2, "depth": 4, "size": "4M"}
    if shutil.which("fio") is None:
        assert os.environ.get("CAPLAB_REQUIRE_FIO") != "1", "fio is required here (CI installs it)"
        assert baseline["status"] == "skipped" and "fio is not installed" in baseline["note"]
        return
    assert baseline["status"] == "measured", baseline
    assert [j["name"] for j in baseline["jobs"]] == ["randread-8k", "randwrite-8k"]
    for job in baseline["jobs"]:
        # 8 KB a request: the bandwidth is the IOPS times the block size.
        assert job["iops"] > 0
        assert job["mb_s"] == pytest.approx(job["iops"] * 8192 / 1e6, rel=0.05)
        assert 0 < job["lat_ms"]["p50"] <= job["lat_ms"]["p99"]
    assert "storage baseline: randread-8k" in ran.done.stderr


def test_junit_holds_each_cells_trials_as_passing_cases(ran: Ran) -> None:
    """`--junit`: a fixed-load study's verdicts, one suite per cell and one case per trial, read
    back by a parser of its own."""
    from xml.dom import minidom

    gate = Path(ran.db_url.removeprefix("sqlite:///")).parent / "gate.xml"
    doc = minidom.parse(str(gate))
    suites = doc.getElementsByTagName("testsuite")
    names = [s.getAttribute("name") for s in suites]
    assert [n.split()[:2] for n in names] == [["cell", str(c["index"])] for c in ran.doc["cells"]]
    for suite in suites:
        cases = suite.getElementsByTagName("testcase")
        assert len(cases) == REPEAT
        assert not suite.getElementsByTagName("failure")
    assert "JUnit: " in ran.done.stderr
