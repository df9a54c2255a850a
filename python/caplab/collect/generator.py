"""The observer's own cost: caplab's process, engine threads included, as scope ``generator``.

On one machine the load generator competes with the system under test for the same cores, so its
CPU is reported beside the roles' rather than hidden in the host's. Child processes are left out —
the system under test is often one of them — except caplab's own daemons (``python -m
caplab.profiles.…``: the link delay, device models), whose cost is caplab's, never the system's:
they are in ``cpu_percent`` and shown apart as ``daemon_cpu_percent``.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from caplab.collect.base import ResourceSample

__all__ = ["GeneratorCollector"]

MIB = 1024 * 1024
DAEMON_MODULE = "caplab.profiles."
"""What a caplab daemon's command line runs (``python -m caplab.profiles.delay``)."""


def _daemons(process: psutil.Process) -> dict[tuple[int, float], float]:
    """CPU seconds of each caplab daemon under ``process``, by (pid, create time)."""
    out: dict[tuple[int, float], float] = {}
    for child in process.children(recursive=True):
        try:
            with child.oneshot():
                if not any(arg.startswith(DAEMON_MODULE) for arg in child.cmdline()):
                    continue
                times = child.cpu_times()
                out[(child.pid, child.create_time())] = times.user + times.system
        except psutil.Error:
            continue  # ended, or not ours to read
    return out


def own_cpu_stat() -> Path | None:
    """The ``cpu.stat`` of the cgroup this process runs in (v1 ``cpu`` controller or v2), or None.

    A generator held to a CPU quota stalls whenever the quota runs out, and both its sends and
    its reads of replies wait: the second shows as the system's latency. The quota's own count of
    throttled periods is the one witness of that."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",")
        if "cpu" in names:
            candidate = Path("/sys/fs/cgroup/cpu") / path.lstrip("/") / "cpu.stat"
        elif controllers == "":
            candidate = Path("/sys/fs/cgroup") / path.lstrip("/") / "cpu.stat"
        else:
            continue
        if candidate.exists():
            return candidate
    return None


def _throttling(stat: Path | None) -> tuple[int, int] | None:
    """(periods, throttled periods) so far, or None where the kernel keeps no such count."""
    if stat is None:
        return None
    try:
        values = dict(line.split() for line in stat.read_text().splitlines() if line.strip())
        return int(values["nr_periods"]), int(values["nr_throttled"])
    except (OSError, KeyError, ValueError):
        return None


class GeneratorCollector:
    """Scope ``generator``: cpu_percent (100 = one core), rss_mb, threads; and throttled_percent,
    the share of its CPU quota's periods in which it was throttled, when it runs under one."""

    name = "generator"

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._prev_cpu = 0.0
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""
        self._stat = own_cpu_stat()
        self._prev_throttling = _throttling(self._stat)
        self._prev_daemons: dict[tuple[int, float], float] = {}

    def start(self) -> None:
        self.sampled_at = time.monotonic()
        self._prev_cpu = self._cpu_s()
        self._prev_throttling = _throttling(self._stat)
        self._prev_daemons = _daemons(self._process)

    def sample(self, t: float) -> list[ResourceSample]:
        now_t = time.monotonic()
        cpu = self._cpu_s()
        wall = max(now_t - self.sampled_at, 1e-9)
        with self._process.oneshot():
            rss = self._process.memory_info().rss
            threads = self._process.num_threads()
        daemons = _daemons(self._process)
        # A daemon first seen now counts from here on (its start-up is the cell's set-up).
        daemon_s = sum(max(0.0, c - self._prev_daemons.get(k, c)) for k, c in daemons.items())
        self._prev_daemons = daemons
        own = max(0.0, cpu - self._prev_cpu) / wall * 100
        values = {
            "cpu_percent": own + daemon_s / wall * 100,
            "daemon_cpu_percent": daemon_s / wall * 100,
            "rss_mb": rss / MIB,
            "threads": float(threads),
        }
        self._prev_cpu, self.sampled_at = cpu, now_t
        throttling = _throttling(self._stat)
        if throttling is not None and self._prev_throttling is not None:
            periods = throttling[0] - self._prev_throttling[0]
            if periods > 0:
                values["throttled_percent"] = 100.0 * (throttling[1] - self._prev_throttling[1]) / periods
        self._prev_throttling = throttling
        return [ResourceSample(t, self.name, metric, value) for metric, value in values.items()]

    def stop(self) -> None:
        pass

    def _cpu_s(self) -> float:
        times = self._process.cpu_times()
        return times.user + times.system
