"""CPU: a bandwidth quota (v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, v2 ``cpu.max``), with
an optional cpuset; usage from ``cpuacct.usage`` (v1) or ``cpu.stat`` (v2)."""

from __future__ import annotations

import math
from pathlib import Path

from caplab.profiles.cgroup import Cgroup, read_keyed
from caplab.profiles.models import CpuLimit
from caplab.profiles.resource import Usage, write_pid

PERIOD_US = 10_000
"""The quota's accounting period. A role over its quota waits for the next period, so the period
bounds the stall it sees: the kernel's default 100 ms would add up to 100 ms to a request's
latency at any load, where a slower CPU adds a little to each. 10 ms keeps the stall near a
request's scale at a modest accounting cost."""
MIN_QUOTA_US = 1_000
"""The kernel's floor for a quota: a share below 0.1 host CPUs gets a longer period instead (a
sixteenth of a CPU: 1 ms every 16 ms), never a larger share."""


def period_us(host_cpus: float) -> int:
    """The period for a quota of ``host_cpus``: 10 ms, or as long as the quota's 1 ms floor needs."""
    return max(PERIOD_US, math.ceil(MIN_QUOTA_US / host_cpus)) if host_cpus > 0 else PERIOD_US


def controllers_for(limit: CpuLimit, version: int) -> set[str]:
    wanted = {"cpu", "cpuacct"} if version == 1 else {"cpu"}
    if limit.cpuset:
        wanted.add("cpuset")
    return wanted


class CpuQuota:
    """A role's CPU quota of ``limit.cpus`` profile cores, ``scale`` host cores each."""

    kind = "cpu"

    def __init__(self, group: Cgroup, limit: CpuLimit, scale: float = 1.0) -> None:
        self.group = group
        self.limit = limit
        self.scale = scale
        self.host_cpus = limit.host_cpus(scale)
        self.period_us = period_us(self.host_cpus)
        self.quota_us = max(MIN_QUOTA_US, round(self.host_cpus * self.period_us))

    def create(self) -> None:
        if self.group.layout.version == 1:
            self.group.write("cpu", "cpu.cfs_period_us", str(self.period_us))
            self.group.write("cpu", "cpu.cfs_quota_us", str(self.quota_us))
        else:
            self.group.write("cpu", "cpu.max", f"{self.quota_us} {self.period_us}")
        if self.limit.cpuset:
            self.group.write("cpuset", "cpuset.cpus", self.limit.cpuset)

    def procs_files(self) -> list[Path]:
        return self.group.procs_files(controllers_for(self.limit, self.group.layout.version))

    def enter_argv(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        write_pid(self.procs_files(), pid)

    def usage(self) -> Usage:
        """CPU seconds used, and how often the quota throttled the role (periods and seconds)."""
        stat = read_keyed(self.group.file("cpu", "cpu.stat"))
        if self.group.layout.version == 1:
            used = int(self.group.read("cpuacct", "cpuacct.usage")) / 1e9
            throttled = stat.get("throttled_time", 0) / 1e9
        else:
            used = stat.get("usage_usec", 0) / 1e6
            throttled = stat.get("throttled_usec", 0) / 1e6
        return {
            "cpu_seconds": used,
            "periods": stat.get("nr_periods", 0),
            "throttled_periods": stat.get("nr_throttled", 0),
            "throttled_seconds": throttled,
            "quota_host_cpus": self.quota_us / self.period_us,
            "period_us": self.period_us,
            "profile_cpus": self.limit.cpus,
        }

    def remove(self) -> None:
        """Nothing of its own: the quota goes with the role's group."""
