"""`caplab load --cluster … --agents N` as a user runs it: the installed command in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from caplab.systems.process import RunningServer, start_module
from support.servers import default_sigint, served_requests


def caplab(cmd: list[str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as running:
        yield running


def url_of(server: RunningServer) -> str:
    return f"http://{server.host}:{server.port}/"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "local", "--agents", "0"], "'--agents': 0 is not in the range x>=1"),
        (["--agents", "2"], "--agents needs --cluster"),
        (["--users", "1", "--cluster", "local", "--agents", "2"], "1 user cannot be split among 2 agents"),
        (["--cluster", "local", "--action", "1s:true"], "--action runs on this machine: not with --cluster"),
    ],
)
@pytest.mark.slow
def test_bad_cluster_arguments_exit_2(caplab_cmd: list[str], args: list[str], message: str) -> None:
    load = ["--rate", "10"] if "--users" not in args else []
    p = caplab(caplab_cmd, "load", "http://127.0.0.1:9/", *load, *args)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_an_unreachable_cluster_exits_1_saying_so(caplab_cmd: list[str], closed_port: int) -> None:
    address = f"ray://127.0.0.1:{closed_port}"
    p = caplab(
        caplab_cmd, "load", "http://127.0.0.1:9/", "--rate", "10", "--cluster", address, "--agents", "2"
    )
    assert p.returncode == 1
    assert f"caplab: cannot reach the Ray cluster at {address}: connection refused" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


@pytest.mark.slow
def test_more_agents_than_cpus_warns_with_the_numbers_and_still_runs(
    caplab_cmd: list[str], server: RunningServer
) -> None:
    cpus = os.cpu_count() or 1
    agents = cpus + 1
    p = caplab(
        caplab_cmd, "load", url_of(server), "--rate", str(100 * agents), "-d", "2s", "--json",
        "--cluster", "local", "--agents", str(agents),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"caplab: warning: {agents} agents on a cluster with {cpus} CPUs" in p.stderr
    result = json.loads(p.stdout)
    assert result["cluster"] == {"address": "local", "agents": agents}
    assert [a["name"] for a in result["agents"]] == [f"agent-{i + 1}" for i in range(agents)]
    assert result["sent"] == sum(a["sent"] for a in result["agents"])
    assert all(a["offered_rate"] == pytest.approx(100.0) for a in result["agents"])


@pytest.mark.slow
def test_ctrl_c_stops_every_agent_and_keeps_what_they_measured(
    caplab_cmd: list[str], server: RunningServer
) -> None:
    before = served_requests(server)
    p = subprocess.Popen(
        [*caplab_cmd, "load", url_of(server), "--rate", "200", "-d", "120s", "--json", "--cluster", "local"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job has
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 90
        while served_requests(server) < before + 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(p.pid, signal.SIGINT)  # Ctrl-C reaches the whole group, Ray's processes too
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["interrupted"] is True
    assert [a["failure"] for a in result["agents"]] == [None, None]
    assert all(a["sent"] > 0 for a in result["agents"])
    assert result["sent"] < 200 * 120


@pytest.mark.slow
def test_a_capacity_search_without_a_cluster_refuses_agents(caplab_cmd: list[str]) -> None:
    p = caplab(caplab_cmd, "find-capacity", "http://127.0.0.1:9/", "--slo", "p99<50ms", "--agents", "2")
    assert p.returncode == 2, p.stderr
    assert "--agents needs --cluster" in p.stderr


@pytest.mark.slow
def test_a_capacity_search_on_two_agents_finds_a_known_ceiling(caplab_cmd: list[str]) -> None:
    """knownserver holding its only thread 20 ms per request serves 50/s whoever sends."""
    with start_module("caplab.systems.knownserver", "--cpu-us", "0", "--serial-sleep-ms", "20") as slow:
        p = caplab(
            caplab_cmd, "find-capacity", url_of(slow), "--slo", "p99<500ms", "--start", "10",
            "--precision", "10%", "--trial", "2s", "--confirm", "2s", "--repeats", "1", "--warmup", "0.5s",
            "--json", "--cluster", "local", "--agents", "2",
            timeout=300,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    assert answer["found"] is True
    assert 40.0 <= answer["capacity_rps"] <= 52.0, answer["capacity_rps"]
