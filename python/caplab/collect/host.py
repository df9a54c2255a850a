"""The host as a whole: CPU (all cores and each core), memory and load average.

CPU figures come from the kernel's per-core tick counters (``/proc/stat`` via psutil), as shares of
the ticks each core accounted in the interval, so they need no wall clock and a stalled sampler
cannot inflate them. Busy is everything but idle and iowait (steal included, as psutil and top
count it: a core the hypervisor gave away is not free for the system under test).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import psutil

from caplab.collect.base import ResourceSample

__all__ = ["HostCollector"]

MIB = 1024 * 1024


def _ticks(times: Any) -> dict[str, float]:
    """One core's cumulative CPU seconds by kind; guest time is already inside user and nice."""

    def get(field: str) -> float:
        return float(getattr(times, field, 0.0))  # the fields differ by platform

    total = sum(float(v) for v in times) - get("guest") - get("guest_nice")
    idle = get("idle") + get("iowait")
    return {
        "total": total,
        "busy": total - idle,
        "user": get("user") + get("nice"),
        "system": get("system") + get("irq") + get("softirq"),
        "iowait": get("iowait"),
        "steal": get("steal"),
    }


class HostCollector:
    """Scope ``host``: cpu_percent (100 = one core, so up to 100 × cores), cpu_util_percent (0–100 of
    all cores), user/system/iowait/steal_percent (in core units like cpu_percent), cores,
    mem_used_mb (total − available), mem_available_mb, mem_total_mb, load1. Scope ``cpu:N``:
    cpu_percent of that core (0–100)."""

    name = "host"

    def __init__(self) -> None:
        self._prev: list[dict[str, float]] = []

    def start(self) -> None:
        self._prev = self._read()

    def sample(self, t: float) -> list[ResourceSample]:
        now = self._read()
        prev, self._prev = self._prev, now
        if len(prev) != len(now):
            return []  # a core went on- or offline: the next interval has a clean baseline
        shares = [_shares(p, n) for p, n in zip(prev, now, strict=True)]
        out = [ResourceSample(t, f"cpu:{i}", "cpu_percent", s["busy"]) for i, s in enumerate(shares)]
        cores = len(shares)
        host = {kind: sum(s[kind] for s in shares) for kind in ("busy", "user", "system", "iowait", "steal")}
        mem = psutil.virtual_memory()
        values = {
            "cpu_percent": host["busy"],
            "cpu_util_percent": host["busy"] / cores if cores else 0.0,
            "user_percent": host["user"],
            "system_percent": host["system"],
            "iowait_percent": host["iowait"],
            "steal_percent": host["steal"],
            "cores": float(cores),
            "mem_used_mb": (mem.total - mem.available) / MIB,
            "mem_available_mb": mem.available / MIB,
            "mem_total_mb": mem.total / MIB,
            "load1": os.getloadavg()[0],
        }
        out += [ResourceSample(t, "host", metric, value) for metric, value in values.items()]
        return out

    def stop(self) -> None:
        self._prev = []

    @staticmethod
    def _read() -> list[dict[str, float]]:
        per_core: Sequence[Any] = psutil.cpu_times(percpu=True)
        return [_ticks(c) for c in per_core]


def _shares(prev: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    """Percent of one core spent in each kind of time over the interval."""
    elapsed = now["total"] - prev["total"]
    if elapsed <= 0:
        return {kind: 0.0 for kind in now}
    return {kind: min(100.0, max(0.0, (now[kind] - prev[kind]) / elapsed * 100)) for kind in now}
