"""Running the engine from Python (tests, studies): ``start(…)`` launches ``python -m
caplab.systems.hl7`` and returns once every channel listens, with the addresses it printed."""

from __future__ import annotations

import collections
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from caplab.systems import exposition
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
        needle = f"caplab.systems.hl7.{module} "
        found = []
        for p in psutil.Process(self.process.pid).children():
            try:
                if needle in " ".join(p.cmdline()) + " " and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p.pid)
            except psutil.Error:
                continue
        return sorted(found)

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
        with urllib.request.urlopen(self.metrics_url, timeout=5) as reply:
            return exposition.parse(reply.read().decode())

    def total(self, name: str, samples: dict[str, float] | None = None) -> float:
        """A family summed over its channels."""
        samples = self.metrics() if samples is None else samples
        return sum(v for k, v in samples.items() if k == name or k.startswith(name + "{"))

    def wait_until(self, done: Callable[[dict[str, float]], bool], timeout_s: float) -> dict[str, float]:
        deadline = time.monotonic() + timeout_s
        while True:
            samples = self.metrics()
            if done(samples):
                return samples
            if time.monotonic() > deadline or self.process.poll() is not None:
                tail = self.stderr_tail()[-1000:]
                raise TimeoutError(f"hl7 did not get there within {timeout_s} s: {samples} {tail}")
            time.sleep(0.05)

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
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def _drain(stream: IO[str], into: Callable[[str], None]) -> None:
    for line in stream:
        into(line)


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
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr: collections.deque[str] = collections.deque(maxlen=400)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_drain, args=(proc.stderr, stderr.append), daemon=True).start()
    threading.Thread(target=_drain, args=(proc.stdout, lines.put), daemon=True).start()
    ready: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while len(ready) < READY_LINES:
        try:
            line = lines.get(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
        except queue.Empty:
            if proc.poll() is None and time.monotonic() < deadline:
                continue
            proc.kill()
            proc.wait()
            time.sleep(0.1)
            raise RuntimeError(f"hl7 did not start: {''.join(stderr).strip()[-2000:]}") from None
        key, _, value = line.strip().partition(" ")
        ready[key] = value
    return RunningHl7(
        process=proc,
        ports=tuple(int(a.rsplit(":", 1)[1]) for a in ready["channels"].split(",")),
        metrics_url=ready["metrics"],
        data_dir=Path(data_dir),
        out_dir=Path(ready["out"]) if "out" in ready else None,
        _stderr=stderr,
    )
