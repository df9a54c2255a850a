"""The observer's own cost: caplab's process, engine threads included, as scope ``generator``.

On one machine the load generator competes with the system under test for the same cores, so its
CPU is reported beside the roles' rather than hidden in the host's. Child processes are left out:
the system under test is often one of them.
"""

from __future__ import annotations

import time

import psutil

from caplab.collect.base import ResourceSample

__all__ = ["GeneratorCollector"]

MIB = 1024 * 1024


class GeneratorCollector:
    """Scope ``generator``: cpu_percent (100 = one core), rss_mb, threads."""

    name = "generator"

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._prev_cpu = 0.0
        self._last = 0.0

    def start(self) -> None:
        self._last = time.monotonic()
        self._prev_cpu = self._cpu_s()

    def sample(self, t: float) -> list[ResourceSample]:
        now_t = time.monotonic()
        cpu = self._cpu_s()
        wall = max(now_t - self._last, 1e-9)
        with self._process.oneshot():
            rss = self._process.memory_info().rss
            threads = self._process.num_threads()
        values = {
            "cpu_percent": max(0.0, cpu - self._prev_cpu) / wall * 100,
            "rss_mb": rss / MIB,
            "threads": float(threads),
        }
        self._prev_cpu, self._last = cpu, now_t
        return [ResourceSample(t, self.name, metric, value) for metric, value in values.items()]

    def stop(self) -> None:
        pass

    def _cpu_s(self) -> float:
        times = self._process.cpu_times()
        return times.user + times.system
