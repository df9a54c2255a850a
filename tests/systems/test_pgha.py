"""pgha: a killed leader is found, replaced and promoted by Patroni alone, in phases that agree
with what a client saw; a switchover through Patroni's API loses no acknowledged write; and
everything started — etcd, Patroni, PostgreSQL, the directory — is gone after a stop."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from caplab.systems.pgha import failover
from support.foreground import read_started
from support.pgha import FAST, StartCluster, Writer, held_ids, require_patroni

pytestmark = pytest.mark.slow  # a real cluster built and failed over per test

MARGIN_S = 3.0
AGREE_S = 0.5


@pytest.fixture(autouse=True)
def _patroni_installed() -> None:
    require_patroni()


def test_a_killed_leader_is_replaced_by_patroni_in_phases_the_client_agrees_with(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(nodes=2, **FAST)
    with Writer(cluster) as writer:
        while len(writer.acked) < 20:
            time.sleep(0.05)
        result = failover.kill_primary(cluster)
        new = cluster.node(result["new_primary"])
        at = result["phases"]["at"]
        client_first = writer.wait_acked_after(at["fault"], new.port, 30.0)
    assert result["old_primary"] != result["new_primary"] and result["timeline"] >= 2
    s = cluster.state
    after = result["phases"]["after_fault_s"]
    assert after["writable"] <= s.ttl + s.loop_wait + MARGIN_S, after
    resolution = result["phases"]["resolution_s"]
    assert at["fault"] < at["detected"] <= at["elected"], at
    assert at["elected"] - resolution <= at["promoted"] <= at["writable"], at
    assert abs(client_first - at["writable"]) <= AGREE_S, (client_first - at["fault"], after)
    # the old leader comes back as a replica of the new one (Patroni rewinds it)
    failover.rejoin(cluster)
    status = cluster.status()
    assert status["leader"] == new.name and status["timeline"] == result["timeline"]
    assert all(n["patroni_pid"] and n["postmaster_pid"] for n in status["nodes"])


def test_a_switchover_through_patronis_api_loses_no_acknowledged_write(start_cluster: StartCluster) -> None:
    """Its phases run from the request to Patroni (the fault): the old leader steps down, the new
    one is elected, promoted and writable, when the client's first write on it was acknowledged."""
    cluster = start_cluster(nodes=2, sync=True, **FAST)
    old = cluster.status()["leader"]
    with Writer(cluster) as writer:
        while len(writer.acked) < 20:
            time.sleep(0.05)
        result = failover.switchover(cluster)
        new = cluster.node(result["new_primary"])
        at = result["phases"]["at"]
        client_first = writer.wait_acked_after(at["fault"], new.port, 30.0)
    assert result["old_primary"] == old and result["new_primary"] != old
    resolution = result["phases"]["resolution_s"]
    assert at["fault"] < at["detected"] <= at["elected"], at
    assert at["elected"] - resolution <= at["promoted"] <= at["writable"], at
    assert result["writable_after_s"] == pytest.approx(at["writable"] - at["fault"], abs=0.001)
    assert abs(client_first - at["writable"]) <= AGREE_S, (client_first - at["fault"], at)
    assert "stepping down" in result["phases"]["set_by"]["detected"]
    acked = {i for i, _, _ in writer.acked}
    before = {i for i, _, p in writer.acked if p != new.port}
    assert before and acked - before, "writes were acknowledged on both sides of the switchover"
    assert acked <= held_ids(cluster), sorted(acked - held_ids(cluster))[:10]


def test_the_command_line_runs_a_cluster_until_sigterm_and_leaves_nothing() -> None:
    command = [sys.executable, "-m", "caplab.systems.pgha", "start", "--port", "0", "--rest-port", "0"]
    command += ["--etcd-port", "0", "--ttl", "10", "--loop-wait", "2", "--retry-timeout", "4"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port, status = read_started(proc, "pgha")
        data_dir = Path(status["passfile"]).parent
        assert status["leader"] == "node0" and len(status["members"]) == 2
        assert status["nodes"][0]["port"] == port
        assert "password" not in json.dumps(status).lower().replace("passfile", "")
        pids = [status["etcd"]["pid"]] + [
            n[k] for n in status["nodes"] for k in ("patroni_pid", "postmaster_pid")
        ]
        assert all(pids), status
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not data_dir.exists()
        alive = [
            p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        assert not alive
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def pgha(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "caplab.systems.pgha", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def test_a_stopped_cluster_starts_again_from_its_directory() -> None:
    directory = Path(tempfile.mkdtemp(prefix="caplab-test-pgha-"))
    directory.chmod(0o755)  # the servers run as an unprivileged user
    data_dir = directory / "ha"
    free = ["--port", "0", "--rest-port", "0", "--etcd-port", "0"]
    fast = ["--ttl", "10", "--loop-wait", "2", "--retry-timeout", "4"]
    try:
        built = pgha("start", "--data-dir", str(data_dir), "--detach", "--databases", "1", *free, *fast)
        assert built.returncode == 0, built.stderr
        assert pgha("stop", "--data-dir", str(data_dir)).returncode == 0
        assert json.loads((data_dir / "pgha.json").read_text())["running"] is False
        again = pgha("start", "--data-dir", str(data_dir), "--detach")
        assert again.returncode == 0, again.stderr
        status = json.loads(pgha("status", "--data-dir", str(data_dir)).stdout)
        assert status["leader"] in ("node0", "node1") and status["databases"]["count"] == 1
        assert len(status["members"]) == 2, status
        assert all(n["patroni_pid"] and n["postmaster_pid"] for n in status["nodes"]), status
    finally:
        stopped = pgha("stop", "--data-dir", str(data_dir), "--remove")
        shutil.rmtree(directory, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr
