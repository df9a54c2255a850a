"""Whether this machine can apply the given profiles, checked before a study's first cell so it
stops with a message naming exactly what is missing instead of failing half-applied."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from caplab.profiles.cgroup import detect
from caplab.profiles.errors import ProfileError, run_tool
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
            name = "blkio" if controller == "io" and layout.version == 1 else controller
            if not layout.available(controller):
                problems.append(
                    f"cgroup v{layout.version} controller {name} is not available (needed for {use})"
                )
            elif not os.access(layout.root_of(controller), os.W_OK):
                problems.append(
                    f"cgroup v{layout.version} controller {name} is read-only at {layout.root_of(controller)}"
                    f" (needed for {use}; a container needs --privileged or a writable cgroup mount)"
                )
    if wants_volumes:
        if not Path("/dev/loop-control").exists():
            problems.append("no loop devices (/dev/loop-control is missing; modprobe loop)")
        elif not os.access("/dev/loop-control", os.R_OK | os.W_OK):
            problems.append("loop devices are not usable: /dev/loop-control is not writable")
        problems += _missing_tools(["losetup", "mkfs.ext4", "mount", "umount"], "volumes")
    if wants_links:
        missing = _missing_tools(["ip", "tc", "nsenter"], "links")
        if any(p.link and p.link.rtt_ms for p in profiles):
            missing += _missing_tools(["iptables"], "a link's round trip (NFQUEUE)")
        problems += missing or _probe_netns()
    return problems


def _probe_netns() -> list[str]:
    """Create and delete one namespace: uid 0 in a container may still lack the capability."""
    probe = f"caplab-{os.getpid()}-0-probe"
    try:
        run_tool(["ip", "netns", "add", probe], "network namespaces are not usable")
    except ProfileError as exc:
        return [str(exc)]
    run_tool(["ip", "netns", "del", probe], "network namespaces: removing the probe", check=False)
    return []


def _missing_tools(tools: list[str], use: str) -> list[str]:
    return [f"{tool} is not installed (needed for {use})" for tool in tools if shutil.which(tool) is None]
