"""Starting a reference server as a child process and learning the address it listens on."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from types import TracebackType


@dataclass
class RunningServer:
    """A server process that printed ``listening HOST:PORT`` as its first line."""

    process: subprocess.Popen[str]
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_module(
    module: str, *args: str, timeout_s: float = 15.0, prefix: tuple[str, ...] = ()
) -> RunningServer:
    """Runs ``python -m module args…`` (optionally behind ``prefix``, e.g. taskset) and waits for
    its ``listening HOST:PORT`` line."""
    cmd = [*prefix, sys.executable, "-m", module, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening ") or time.monotonic() > deadline:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"{module} did not start: {line.strip()} {err.strip()[-500:]}")
    host, _, port = line.split()[1].rpartition(":")
    return RunningServer(proc, host, int(port))
