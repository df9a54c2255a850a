"""Running msgbus from Python (tests, studies): ``start(…)`` launches the supervisor as a child
process and returns once every tier is ready, with the addresses it printed."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from caplab.systems import exposition, launch
from caplab.systems.msgbus.messagebox import STORE_URL_ENV
from caplab.systems.msgbus.supervisor import ROLES

READY_LINES = 6
"""listening, http, metrics, sink, stores, hosts (what the supervisor prints once ready)."""


@dataclass
class RunningMsgbus:
    """A running msgbus: the supervisor process, its addresses, and ways to look inside."""

    process: subprocess.Popen[str]
    tcp_port: int
    http_port: int
    metrics_url: str
    sink_port: int
    store_ports: tuple[int, ...]
    sink_log: Path | None = None
    """Where the sink appends each newly delivered interchange id (if asked to)."""
    _stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=200))

    @property
    def address(self) -> str:
        """Receive's framed TCP address (what ``caplab load tcp://…`` targets)."""
        return f"127.0.0.1:{self.tcp_port}"

    def stderr_tail(self) -> str:
        return "".join(self._stderr)

    def tier_pids(self, role: str) -> list[int]:
        """Pids of one tier's live processes (role as in ROLES), found the way caplab's role
        matcher finds them: by command-line substring among the supervisor's children."""
        return launch.child_pids(self.process, ROLES[role], recursive=True)

    def host_pids(self) -> list[int]:
        return self.tier_pids("processing")

    def kill_host(self) -> int:
        """SIGKILLs one host process (no chance to complete its claims); returns its pid."""
        pids = self.host_pids()
        if not pids:
            raise RuntimeError("no host process is running")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def metrics(self) -> dict[str, float]:
        """Current samples from ``/metrics``, keyed ``name`` or ``name{labels}``."""
        return exposition.scrape(self.metrics_url)

    def wait_until(self, done: Callable[[dict[str, float]], bool], timeout_s: float) -> dict[str, float]:
        """Polls the metrics until ``done(samples)``; raises TimeoutError with the last samples."""
        return launch.wait_until("msgbus", self.process, self.metrics, done, timeout_s, _summary)

    def wait_drained(self, timeout_s: float = 30.0) -> dict[str, float]:
        """Waits until every received document is processed and no message is left in a store."""
        return self.wait_until(
            lambda m: (
                m["msgbus_queue_depth"] == 0
                and m["msgbus_documents_processed_total"] == m["msgbus_documents_received_total"]
            ),
            timeout_s,
        )

    def stop(self) -> int:
        """SIGTERM (the supervisor stops every tier), SIGKILL if it hangs; returns its exit code."""
        return launch.stop(self.process, timeout_s=20)

    def __enter__(self) -> RunningMsgbus:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _summary(samples: dict[str, float]) -> str:
    keys = ("msgbus_documents_received_total", "msgbus_documents_processed_total", "msgbus_queue_depth")
    return ", ".join(f"{k}={samples.get(k)}" for k in keys)


def start(
    hosts: int = 1,
    stores: int = 1,
    *,
    store_url: str | None = None,
    data_dir: Path | str | None = None,
    sink_log: Path | str | None = None,
    lease_s: float = 5.0,
    port: int = 0,
    http_port: int = 0,
    metrics_port: int = 0,
    sink_port: int = 0,
    store_port: int = 0,
    timeout_s: float = 60.0,
) -> RunningMsgbus:
    """Starts ``python -m caplab.systems.msgbus`` (ports default to free ones) and waits until it is
    ready. A PostgreSQL URL travels in the environment, never on a command line."""
    args = ["--hosts", str(hosts), "--stores", str(stores), "--lease", str(lease_s)]
    ports = {"port": port, "http-port": http_port, "metrics-port": metrics_port, "sink-port": sink_port}
    ports["store-port"] = store_port
    for flag, number in ports.items():
        args += [f"--{flag}", str(number)]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    if sink_log is not None:
        args += ["--sink-log", str(sink_log)]
    env = {k: v for k, v in os.environ.items() if k != STORE_URL_ENV}
    if store_url is not None:
        env[STORE_URL_ENV] = store_url
    cmd = [sys.executable, "-m", "caplab.systems.msgbus", *args]
    started = launch.start("msgbus", cmd, env, READY_LINES, timeout_s, stderr_lines=200)
    ready = started.ready
    return RunningMsgbus(
        process=started.process,
        tcp_port=_port(ready["listening"]),
        http_port=_port(ready["http"]),
        metrics_url=ready["metrics"],
        sink_port=_port(ready["sink"]),
        store_ports=tuple(_port(a) for a in ready["stores"].split(",")),
        sink_log=Path(sink_log) if sink_log is not None else None,
        _stderr=started.stderr,
    )


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])
