"""CPU: a bandwidth quota (v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, v2 ``cpu.max``), with
an optional cpuset; usage from ``cpuacct.usage`` (v1) or ``cpu.stat`` (v2)."""

from __future__ import annotations

from pathlib import Path

from caplab.profiles.cgroup import Cgroup, read_keyed
from caplab.profiles.models import CpuLimit
from caplab.profiles.resource import Usage, write_pid

PERIOD_US = 10_000
"""The quota's accounting period. A role over its quota waits for the next period, so the period
bounds the stall it sees: the kernel's default 100 ms would add up to 100 ms to a request's
latency at any load, where a slower CPU adds a little to each. 10 ms keeps the stall near a
request's scale at a modest accounting cost (a quota of at least 1 ms: 0.1 host CPUs)."""
_MIN_QUOTA_US = 1_000  # the kernel's floor for a quota


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
        self.quota_us = max(_MIN_QUOTA_US, round(self.host_cpus * PERIOD_US))

    def create(self) -> None:
        if self.group.layout.version == 1:
            self.group.write("cpu", "cpu.cfs_period_us", str(PERIOD_US))
            self.group.write("cpu", "cpu.cfs_quota_us", str(self.quota_us))
        else:
            self.group.write("cpu", "cpu.max", f"{self.quota_us} {PERIOD_US}")
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
            "quota_host_cpus": self.quota_us / PERIOD_US,
            "profile_cpus": self.limit.cpus,
        }

    def remove(self) -> None:
        """Nothing of its own: the quota goes with the role's group."""
