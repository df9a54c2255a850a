"""Generator runs as child processes, measured by the kernel rather than by the tools."""

import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

GENERATOR_CPU = 0  # every load generator is pinned here
SERVER_CPU = 1  # and nginx here, so neither steals the other's cycles


@dataclass(frozen=True)
class ProcessRun:
    """What one tool run printed, and what it cost according to the kernel (wait4 rusage)."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    timed_out: bool


def pinned(cpu: int, argv: Sequence[str]) -> list[str]:
    """Prefix argv with taskset; it execs in place, so wait4 still sees the tool's own pid."""
    return ["taskset", "-c", str(cpu), *argv]


class _Deadline:
    """Kills a child that outlives its time budget, never signalling a pid already reaped."""

    def __init__(self, pid: int, timeout_s: float) -> None:
        self._pid = pid
        self._lock = threading.Lock()
        self._exited = False
        self.fired = False
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._exited:
                os.kill(self._pid, signal.SIGKILL)
                self.fired = True

    def disarm(self) -> None:
        """Called once the child has exited but before it is reaped, so its pid cannot be reused."""
        with self._lock:
            self._exited = True
        self._timer.cancel()


def run_measured(argv: Sequence[str], timeout_s: float) -> ProcessRun:
    """Run argv to completion and take CPU time and peak RSS from wait4 on its own pid.

    Output goes to temporary files rather than pipes, so the harness does no work (and needs no
    reader threads) while the tool runs.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = _Deadline(proc.pid, timeout_s)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        deadline.disarm()
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        return ProcessRun(
            argv=tuple(argv),
            exit_code=proc.returncode,
            stdout=_read_all(out),
            stderr=_read_all(err),
            wall_s=wall_s,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_rss_mb=usage.ru_maxrss / 1024.0,  # Linux reports ru_maxrss in KiB
            timed_out=deadline.fired,
        )


def _read_all(file: IO[bytes]) -> str:
    """Rewind a temporary output file and decode it leniently (tools may print odd bytes)."""
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def cpu_busy_s(cpu: int) -> float:
    """Seconds one CPU has spent busy since boot, from /proc/stat (all processes, irq, softirq).

    Compared with a generator's own CPU time over its run, this shows what else ran on its CPU.
    """
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name == f"cpu{cpu}":
                ticks = [int(x) for x in fields]
                idle, iowait = ticks[3], ticks[4]
                guest = sum(ticks[8:10])  # already counted in user and nice
                return (sum(ticks) - idle - iowait - guest) / ticks_per_s
    raise ValueError(f"no cpu{cpu} line in /proc/stat")


def tree_cpu_s(pid: int) -> float:
    """user+sys seconds of a process and its direct children so far (nginx: master + workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return sum(_pid_cpu_s(p) for p in [pid, *map(int, children)])


def _pid_cpu_s(pid: int) -> float:
    """From /proc/PID/stat, split after the ")" closing the command name (which may hold spaces)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # stat fields 14 and 15
    return (utime + stime) / os.sysconf("SC_CLK_TCK")
