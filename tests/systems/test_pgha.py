"""pgha: a killed leader is found, replaced and promoted by Patroni alone, in phases that agree
with what a client saw; a switchover through Patroni's API loses no acknowledged write; and
everything started — etcd, Patroni, PostgreSQL, the directory — is gone after a stop."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from caplab.systems.pgha import Cluster, HaSettings, failover
from caplab.systems.pgha.patroni import PATRONI
from caplab.systems.pgpair.server import BIN_GLOB, ServerError
from support.foreground import read_started
from support.require import PATRONI as PATRONI_SWITCH
from support.require import require

StartCluster = Callable[..., Cluster]
pytestmark = pytest.mark.slow  # a real cluster built and failed over per test

FAST = {"ttl": 10, "loop_wait": 2, "retry_timeout": 4}
"""Short Patroni settings: a dead leader goes unnoticed for at most ttl + loop_wait = 12 s."""
MARGIN_S = 3.0
AGREE_S = 0.5


@pytest.fixture(autouse=True)
def _patroni_installed() -> None:
    missing = [p for p in (PATRONI, "/usr/bin/etcd") if not Path(p).exists()]
    if not list(Path("/").glob(BIN_GLOB.lstrip("/") + "/initdb")):
        missing.append("PostgreSQL's server binaries")
    require(
        PATRONI_SWITCH,
        [f"{', '.join(missing)} not installed (apt-get install patroni etcd-server)"] if missing else [],
    )


@pytest.fixture
def start_cluster() -> Iterator[StartCluster]:
    """``start_cluster(**settings)``: a cluster on free ports in a temporary directory every user
    may enter; at teardown everything is stopped — killed if need be — and deleted."""
    made: list[tuple[Path, Cluster | None]] = []

    def start(**settings: Any) -> Cluster:
        directory = Path(tempfile.mkdtemp(prefix="caplab-test-pgha-"))
        directory.chmod(0o755)
        made.append((directory, None))
        ports = {"pg_port": 0, "rest_port": 0, "etcd_port": 0}
        cluster = Cluster.create(HaSettings(data_dir=directory / "ha", **{**ports, **settings}))
        made[-1] = (directory, cluster)
        return cluster

    yield start
    for directory, cluster in made:
        if cluster is not None:
            with contextlib.suppress(ServerError):
                cluster.stop()
            for node in cluster.nodes:
                node.daemon.signal(signal.SIGKILL)
                node.server.kill()
                node.server.wait_gone()
            cluster.etcd.daemon.signal(signal.SIGKILL)
        shutil.rmtree(directory, ignore_errors=True)


class Writer:
    """A client inserting rows in a loop through a URL naming every node (read-write), from a
    thread: each acknowledged row with the time of its acknowledgement and the port that took it."""

    def __init__(self, cluster: Cluster) -> None:
        ports = ",".join(str(n.port) for n in cluster.nodes)
        hosts = ",".join("127.0.0.1" for _ in cluster.nodes)
        self.conninfo = (
            f"host={hosts} port={ports} user=caplab password={cluster.password} dbname=postgres "
            "target_session_attrs=read-write connect_timeout=1"
        )
        self.acked: list[tuple[int, float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS ledger (id bigint PRIMARY KEY, at float8)")

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        next_id = 0
        conn: psycopg.Connection[Any] | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self.conninfo, autocommit=True)
                row = conn.execute(
                    "INSERT INTO ledger VALUES (%s, extract(epoch from now())) RETURNING inet_server_port()",
                    (next_id,),
                ).fetchone()
                assert row is not None
                self.acked.append((next_id, time.time(), int(row[0])))
            except psycopg.Error:
                with contextlib.suppress(psycopg.Error):
                    if conn is not None:
                        conn.close()
                conn = None
                time.sleep(0.01)
            next_id += 1
            time.sleep(0.005)
        if conn is not None:
            conn.close()

    def first_after(self, at: float, port: int) -> float | None:
        return next((t for _, t, p in self.acked if t > at and p == port), None)

    def wait_acked_after(self, at: float, port: int, timeout_s: float) -> float:
        deadline = time.monotonic() + timeout_s
        while (found := self.first_after(at, port)) is None:
            assert time.monotonic() < deadline, f"no write acknowledged by port {port} after the fault"
            time.sleep(0.05)
        return found


def held_ids(cluster: Cluster) -> set[int]:
    with psycopg.connect(Writer(cluster).conninfo, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM ledger").fetchall()}


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
    cluster = start_cluster(nodes=2, sync=True, **FAST)
    old = cluster.status()["leader"]
    with Writer(cluster) as writer:
        while len(writer.acked) < 20:
            time.sleep(0.05)
        result = failover.switchover(cluster)
        new = cluster.node(result["new_primary"])
        writer.wait_acked_after(time.time() - 0.001, new.port, 30.0)
    assert result["old_primary"] == old and result["new_primary"] != old
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
