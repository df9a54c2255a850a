"""The machine's processes as /proc shows them, read once per sample and shared by every role.

A role is a process tree found by a command-line match, sampled on the load's clock in the
generator's own process: with a thousand processes on the machine (a mail server forks one per
session) a psutil object per process per role costs most of a host core, which the system under
test then lacks. One pass here reads each ``/proc/PID/stat`` once — parent, start time and every
CPU counter are in it — and a command line only when a process is new to the table (or young
enough that it may still exec), so sampling costs a few milliseconds per thousand processes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

__all__ = [
    "CLOCK_TICKS",
    "PAGE_SIZE",
    "ProcStat",
    "ProcessTable",
    "Snapshot",
    "boot_clock",
    "cmdline",
    "list_pids",
    "read_stat",
]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
YOUNG_S = 2.0
"""A process this young may not have exec'd yet (a fork shows its parent's command line until
then): its command line is read again at every pass rather than cached."""


@dataclass(frozen=True)
class ProcStat:
    """What ``/proc/PID/stat`` says of one process: its CPU in seconds (its own, and that of the
    children it reaped), resident pages in bytes, and its start in seconds since boot (to the tick:
    the clock that tells a process born during an interval from one that only joined a tree)."""

    pid: int
    ppid: int
    comm: str
    started_s: float
    user_s: float
    system_s: float
    children_user_s: float
    children_system_s: float
    threads: int
    rss_bytes: int


def boot_clock() -> float:
    """Now on the clock process start times use (CLOCK_BOOTTIME)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def list_pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat line, parsed; None when it has gone (or is not ours to read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        close = data.rindex(b")")
        # Fields after the parenthesised name start at field 3 (state): ppid is field 4, utime 14,
        # stime 15, cutime 16, cstime 17, num_threads 20, starttime 22, rss 24 (proc(5)).
        fields = data[close + 2 :].split()
        return ProcStat(
            pid=pid,
            ppid=int(fields[1]),
            comm=data[data.index(b"(") + 1 : close].decode(errors="replace"),
            started_s=int(fields[19]) / CLOCK_TICKS,
            user_s=int(fields[11]) / CLOCK_TICKS,
            system_s=int(fields[12]) / CLOCK_TICKS,
            children_user_s=int(fields[13]) / CLOCK_TICKS,
            children_system_s=int(fields[14]) / CLOCK_TICKS,
            threads=int(fields[17]),
            rss_bytes=int(fields[21]) * PAGE_SIZE,
        )
    except (OSError, ValueError, IndexError):
        return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class Snapshot:
    """Every process at one moment, with the two clocks read just before the counters were, so
    that a rate's time span and its counters' span are the same."""

    procs: dict[int, ProcStat]
    monotonic_s: float
    boot_s: float


class ProcessTable:
    """One pass over /proc per sample time, however many roles read it, and command lines cached
    per process (pid, start and name: an exec changes the name, a reused pid the start)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._taken_for: object = None
        self._cmdlines: dict[tuple[int, float, str], tuple[str, float]] = {}
        """Command line and the snapshot (boot clock) it was read at, per process."""

    def at(self, t: float | None) -> Snapshot:
        """The processes for the sample at ``t``: read afresh unless this ``t`` was read already
        (``None``, a collector's start, always reads afresh)."""
        if self._snapshot is None or t is None or t != self._taken_for:
            self._snapshot = self._read()
            self._taken_for = t
        return self._snapshot

    def cmdline(self, p: ProcStat, now_boot_s: float) -> str:
        """The process's command line, read once — or once per snapshot while it is young."""
        key = (p.pid, p.started_s, p.comm)
        cached = self._cmdlines.get(key)
        if cached is None or (cached[1] < now_boot_s and now_boot_s - p.started_s < YOUNG_S):
            cached = self._cmdlines[key] = (cmdline(p.pid), now_boot_s)
        return cached[0]

    def _read(self) -> Snapshot:
        mono, boot = time.monotonic(), boot_clock()
        procs = {}
        for pid in list_pids():
            stat = read_stat(pid)
            if stat is not None:
                procs[pid] = stat
        live = {(p.pid, p.started_s, p.comm) for p in procs.values()}
        self._cmdlines = {k: v for k, v in self._cmdlines.items() if k in live}
        return Snapshot(procs, mono, boot)
