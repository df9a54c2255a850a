"""Whether this machine can apply the given profiles, checked before a study's first cell so it
stops with a message naming exactly what is missing instead of failing half-applied."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from caplab.profiles.cgroup import detect
from caplab.profiles.models import Profile


def check_support(profiles: Iterable[Profile]) -> list[str]:
    """One line per missing mechanism (empty when everything the profiles use is there)."""
    profiles = list(profiles)
    wants_cgroups = any(p.cpus or p.memory for p in profiles)
    wants_volumes = any(p.volumes for p in profiles)
    wants_links = any(p.link for p in profiles)
    if not (wants_cgroups or wants_volumes or wants_links):
        return []
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append(
            "hardware profiles need root (cgroups, loop devices, network namespaces);"
            f" running as uid {os.geteuid()}"
        )
    layout = detect()
    needed: dict[str, str] = {}
    if any(p.cpus for p in profiles):
        needed["cpu"] = "cpus (CPU quota)"
        if layout.version == 1:
            needed["cpuacct"] = "cpus (CPU time read-out)"
    if any(p.cpus and p.cpus.cpuset for p in profiles):
        needed["cpuset"] = "cpuset"
    if any(p.memory for p in profiles):
        needed["memory"] = "memory limits"
    if any(v.throttled for p in profiles for v in p.volumes.values()):
        needed["io"] = "volume IOPS/bandwidth throttling"
    if needed and layout.version == 0:
        problems.append("no cgroup filesystem is mounted under /sys/fs/cgroup")
    elif needed:
        for controller, use in needed.items():
            if not layout.available(controller):
                name = "blkio" if controller == "io" and layout.version == 1 else controller
                problems.append(
                    f"cgroup v{layout.version} controller {name} is not available (needed for {use})"
                )
    if wants_volumes:
        if not Path("/dev/loop-control").exists():
            problems.append("no loop devices (/dev/loop-control is missing; modprobe loop)")
        problems += _missing_tools(["losetup", "mkfs.ext4", "mount", "umount"], "volumes")
    if wants_links:
        problems += _missing_tools(["ip", "tc", "nsenter"], "links")
    return problems


def _missing_tools(tools: list[str], use: str) -> list[str]:
    return [f"{tool} is not installed (needed for {use})" for tool in tools if shutil.which(tool) is None]
