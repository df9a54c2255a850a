"""The node_exporter collector against a real node_exporter (Debian's prometheus-node-exporter,
started by the test on a loopback port) watching this very machine: in the same run, its figures
must agree with the local host collector's — CPU within 5 points, memory within 2 %."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caplab.collect import HostCollector, NodeExporterCollector
from caplab.collect.base import ResourceSample
from support.studies import caplab, free_port, json_out, knownserver, listening, write_study

BINARY = "prometheus-node-exporter"


@pytest.fixture(scope="module")
def node_exporter() -> Iterator[str]:
    path = shutil.which(BINARY)
    if path is None:
        if os.environ.get("CAPLAB_REQUIRE_NODE_EXPORTER") == "1":
            pytest.fail(f"{BINARY} required but not installed")
        pytest.skip(f"{BINARY} is not installed (apt-get install prometheus-node-exporter)")
    port = free_port()
    process = subprocess.Popen(
        [
            path, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
            "--collector.cpu", "--collector.meminfo", "--collector.loadavg", "--collector.diskstats",
            "--collector.netdev",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while not listening(port) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert listening(port), "node_exporter did not start"
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        process.terminate()
        process.wait(timeout=10)


def figures(samples: list[ResourceSample], scope: str) -> dict[str, float]:
    return {s.metric: s.value for s in samples if s.scope == scope}


@pytest.mark.slow
def test_a_remote_host_reads_as_the_local_collector_reads_it(node_exporter: str) -> None:
    remote, local = NodeExporterCollector("self", node_exporter, roles=["db"]), HostCollector()
    remote.start()
    local.start()
    # Half a core busy for a second so there is something to agree on.
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        sum(i * i for i in range(2000))
        time.sleep(0.001)
    there = remote.sample(1.0)
    here = local.sample(1.0)
    node, host = figures(there, "node:self"), figures(here, "host")
    assert node["cores"] == host["cores"]
    assert node["cpu_util_percent"] == pytest.approx(host["cpu_util_percent"], abs=5)
    assert node["mem_used_mb"] == pytest.approx(host["mem_used_mb"], rel=0.02)
    assert node["mem_total_mb"] == pytest.approx(host["mem_total_mb"], rel=0.001)
    role = figures(there, "role:db")
    assert role["host_level"] == 1.0 and role["quota_cpus"] == node["cores"]
    assert role["cpu_percent"] == node["cpu_percent"]


def test_an_unreachable_node_exporter_is_a_clear_error(closed_port: int) -> None:
    collector = NodeExporterCollector("gone", f"http://127.0.0.1:{closed_port}/metrics")
    with pytest.raises(ConnectionError, match=f"node_exporter at http://127.0.0.1:{closed_port}/metrics"):
        collector.start()


@pytest.mark.slow
def test_a_study_places_a_role_on_a_remote_host(node_exporter: str, tmp_path: Path) -> None:
    port = free_port()
    study = {
        "name": "remote",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "hosts": {"box": node_exporter},
        "sut": {
            "start": f"exec {knownserver(port)}",
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"host": "box"}},
        },
        "load": {"rate": 50, "duration": "1s"},
    }
    done = caplab("run", write_study(tmp_path / "s.yaml", study), "--db", f"sqlite:///{tmp_path / 'c.db'}",
                  "--json", "-o", tmp_path / "r", timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    resources = json_out(done)["cells"][0]["resources"]
    assert resources["node:box"]["mem_used_mb"] == pytest.approx(resources["host"]["mem_used_mb"], rel=0.05)
    server = resources["server"]
    assert server["host_level"] == 1.0 and server["cpu_percent"] == resources["node:box"]["cpu_percent"]


@pytest.mark.slow
def test_a_role_on_an_unknown_host_is_a_bad_study(tmp_path: Path) -> None:
    text = (
        "name: remote\ntarget:\n  http:\n    url: http://127.0.0.1:9/\nhosts:\n  box: http://127.0.0.1:9100/metrics\n"
        "sut:\n  roles:\n    db: {host: db1}\nload: {rate: 1}\n"
    )
    (tmp_path / "s.yaml").write_text(text)
    done = caplab("run", tmp_path / "s.yaml", "--db", f"sqlite:///{tmp_path / 'c.db'}")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("s.yaml:9: sut.roles.db.host: unknown host 'db1' (hosts: box)")
