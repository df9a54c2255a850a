"""A pgha cluster for a test, and a client writing through it: the fixtures and helpers the pgha
tests share (failover, switchover, partition)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from caplab.systems.pgha import Cluster, HaSettings
from caplab.systems.pgha.patroni import PATRONI
from caplab.systems.pgpair.server import BIN_GLOB, ServerError
from support.require import PATRONI as PATRONI_SWITCH
from support.require import require

StartCluster = Callable[..., Cluster]

FAST = {"ttl": 10, "loop_wait": 2, "retry_timeout": 4}
"""Short Patroni settings: a dead leader goes unnoticed for at most ttl + loop_wait = 12 s."""


def require_patroni() -> None:
    missing = [p for p in (PATRONI, "/usr/bin/etcd") if not Path(p).exists()]
    if not list(Path("/").glob(BIN_GLOB.lstrip("/") + "/initdb")):
        missing.append("PostgreSQL's server binaries")
    require(
        PATRONI_SWITCH,
        [f"{', '.join(missing)} not installed (apt-get install patroni etcd-server)"] if missing else [],
    )


@contextlib.contextmanager
def cluster_factory() -> Iterator[StartCluster]:
    """``start(**settings)``: a cluster on free ports in a temporary directory every user may
    enter; on exit everything is stopped — killed if need be — and deleted, namespaces too."""
    made: list[tuple[Path, Cluster | None]] = []

    def start(**settings: Any) -> Cluster:
        directory = Path(tempfile.mkdtemp(prefix="caplab-test-pgha-"))
        directory.chmod(0o755)
        made.append((directory, None))
        ports = {"pg_port": 0, "rest_port": 0, "etcd_port": 0}
        cluster = Cluster.create(HaSettings(data_dir=directory / "ha", **{**ports, **settings}))
        made[-1] = (directory, cluster)
        return cluster

    try:
        yield start
    finally:
        for directory, cluster in made:
            if cluster is not None:
                with contextlib.suppress(ServerError):
                    cluster.stop()
                for node in cluster.nodes:
                    node.daemon.signal(signal.SIGKILL)
                    node.server.kill()
                    node.server.wait_gone()
                cluster.etcd.daemon.signal(signal.SIGKILL)
                for net in cluster.nets:
                    net.remove()
            shutil.rmtree(directory, ignore_errors=True)


class Writer:
    """A client inserting rows in a loop through a URL naming every node (read-write), from a
    thread: each acknowledged row with the time of its acknowledgement and the port that took it.
    A node that stops answering (a partition) fails its request after 3 s of silence
    (``tcp_user_timeout``), and the client moves on."""

    def __init__(self, cluster: Cluster) -> None:
        ports = ",".join(str(n.port) for n in cluster.nodes)
        hosts = ",".join(n.host for n in cluster.nodes)
        self.conninfo = (
            f"host={hosts} port={ports} user=caplab password={cluster.password} dbname=postgres "
            "target_session_attrs=read-write connect_timeout=1 tcp_user_timeout=3000"
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
