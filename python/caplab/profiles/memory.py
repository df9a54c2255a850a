"""Memory: a hard limit with swap off (v1 ``memory.limit_in_bytes`` + ``memory.memsw`` or
swappiness 0; v2 ``memory.max`` + ``memory.swap.max``), and the evidence the limit analysis needs:
usage, limit, how often the limit was hit, OOM kills, major faults."""

from __future__ import annotations

import contextlib
from pathlib import Path

from caplab.profiles.cgroup import Cgroup, read_keyed
from caplab.profiles.errors import ProfileError
from caplab.profiles.models import MemoryLimit
from caplab.profiles.resource import Usage, write_pid


class MemoryCap:
    kind = "memory"

    def __init__(self, group: Cgroup, limit: MemoryLimit) -> None:
        self.group = group
        self.limit = limit

    def create(self) -> None:
        limit = str(self.limit.limit_bytes)
        if self.group.layout.version == 1:
            self.group.write("memory", "memory.limit_in_bytes", limit)
            if not self.limit.swap:
                self._v1_swap_off(limit)
            # Pages a process already has move with it when it is attached after its start (the
            # file is gone from recent kernels; charges then stay where they were made).
            with contextlib.suppress(ProfileError):
                self.group.write("memory", "memory.move_charge_at_immigrate", "3")
        else:
            self.group.write("memory", "memory.max", limit)
            swap_max = self.group.file("memory", "memory.swap.max")
            if not self.limit.swap and swap_max.exists():
                self.group.write("memory", "memory.swap.max", "0")

    def _v1_swap_off(self, limit: str) -> None:
        if self.group.file("memory", "memory.memsw.limit_in_bytes").exists():
            self.group.write("memory", "memory.memsw.limit_in_bytes", limit)
        else:  # kernel without swap accounting: ask the group not to swap instead
            self.group.write("memory", "memory.swappiness", "0")

    def procs_files(self) -> list[Path]:
        return self.group.procs_files({"memory"})

    def enter_argv(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        write_pid(self.procs_files(), pid)

    def usage(self) -> Usage:
        """Bytes in use, the peak and the limit; ``limit_hits`` (v1 failcnt, v2 events ``max``;
        some v1 kernels no longer count it, so a peak at the limit is the steadier evidence),
        ``oom_kills`` and ``major_faults`` (reclaim that went to disk)."""
        stat = read_keyed(self.group.file("memory", "memory.stat"))
        if self.group.layout.version == 1:
            oom = read_keyed(self.group.file("memory", "memory.oom_control"))
            return {
                "usage_bytes": int(self.group.read("memory", "memory.usage_in_bytes")),
                "peak_bytes": int(self.group.read("memory", "memory.max_usage_in_bytes")),
                "limit_bytes": int(self.group.read("memory", "memory.limit_in_bytes")),
                "limit_hits": self._v1_limit_hits(),
                "oom_kills": oom.get("oom_kill", 0),
                "major_faults": stat.get("total_pgmajfault", stat.get("pgmajfault", 0)),
            }
        events = read_keyed(self.group.file("memory", "memory.events"))
        peak = self.group.file("memory", "memory.peak")
        current = int(self.group.read("memory", "memory.current"))
        raw_limit = self.group.read("memory", "memory.max")
        return {
            "usage_bytes": current,
            "peak_bytes": int(peak.read_text()) if peak.exists() else current,
            "limit_bytes": int(raw_limit) if raw_limit.isdigit() else -1,
            "limit_hits": events.get("max", 0),
            "oom_kills": events.get("oom_kill", 0),
            "major_faults": stat.get("pgmajfault", 0),
        }

    def _v1_limit_hits(self) -> int:
        """With swap off the memory+swap counter meets the limit first, so both counts are summed."""
        hits = int(self.group.read("memory", "memory.failcnt"))
        if self.group.file("memory", "memory.memsw.failcnt").exists():
            hits += int(self.group.read("memory", "memory.memsw.failcnt"))
        return hits

    def remove(self) -> None:
        """Nothing of its own: the limit goes with the role's group."""
