"""Running the engine from Python (tests, studies): ``start(…)`` launches ``python -m
caplab.systems.hl7`` and returns once every channel listens, with the addresses it printed."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from caplab.systems import exposition, launch
from caplab.systems.hl7.queue import URL_ENV

READY_LINES = 5
"""listening, channels, metrics, out (or sink), db."""


@dataclass
class RunningHl7:
    """A running engine: the supervisor process, its channels' ports, ways to look inside."""

    process: subprocess.Popen[str]
    ports: tuple[int, ...]
    metrics_url: str
    data_dir: Path
    out_dir: Path | None
    _stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=400))

    def stderr_tail(self) -> str:
        return "".join(self._stderr)

    def child_pids(self, module: str) -> list[int]:
        """Live pids of the engine's ``receiver`` or ``worker`` processes."""
        return launch.child_pids(self.process, f"caplab.systems.hl7.{module} ")

    def worker_pid(self, channel: int) -> int:
        for pid in self.child_pids("worker"):
            try:
                cmd = psutil.Process(pid).cmdline()
            except psutil.Error:
                continue
            if cmd[cmd.index("--channel") + 1] == str(channel):
                return pid
        raise RuntimeError(f"no worker for channel {channel} is running")

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def metrics(self) -> dict[str, float]:
        return exposition.scrape(self.metrics_url)

    def total(self, name: str, samples: dict[str, float] | None = None) -> float:
        """A family summed over its channels."""
        samples = self.metrics() if samples is None else samples
        return sum(v for k, v in samples.items() if k == name or k.startswith(name + "{"))

    def wait_until(self, done: Callable[[dict[str, float]], bool], timeout_s: float) -> dict[str, float]:
        return launch.wait_until(
            "hl7", self.process, self.metrics, done, timeout_s, lambda s: f"{s} {self.stderr_tail()[-1000:]}"
        )

    def wait_drained(self, timeout_s: float = 60.0) -> dict[str, float]:
        """Until every queued message is written (or failed)."""
        return self.wait_until(
            lambda m: (
                self.total("hl7_queue_depth", m) == 0
                and self.total("hl7_written_total", m) + self.total("hl7_failed_total", m)
                == self.total("hl7_queued_total", m)
            ),
            timeout_s,
        )

    def stop(self) -> int:
        return launch.stop(self.process, timeout_s=30)


def start(
    data_dir: Path,
    channels: int = 4,
    *,
    db: str | None = None,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> RunningHl7:
    """Starts the engine on free ports and waits until it is ready. A PostgreSQL URL (which may hold
    a password) travels in the environment, never on the command line."""
    environment = {k: v for k, v in (env if env is not None else os.environ).items() if k != URL_ENV}
    if db is not None:
        environment[URL_ENV] = db
    cmd = [sys.executable, "-m", "caplab.systems.hl7", "start", "--data-dir", str(data_dir)]
    cmd += ["--channels", str(channels), "--port", "0", "--metrics-port", "0", *args]
    started = launch.start("hl7", cmd, environment, READY_LINES, timeout_s, stderr_lines=400)
    ready = started.ready
    return RunningHl7(
        process=started.process,
        ports=tuple(int(a.rsplit(":", 1)[1]) for a in ready["channels"].split(",")),
        metrics_url=ready["metrics"],
        data_dir=Path(data_dir),
        out_dir=Path(ready["out"]) if "out" in ready else None,
        _stderr=started.stderr,
    )
