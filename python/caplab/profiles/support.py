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
    wants_devices = any(p.devices for p in profiles)
    wants_volumes = wants_devices or any(p.volumes for p in profiles)
    wants_links = any(p.link for p in profiles)
    if not (wants_cgroups or wants_volumes or wants_links):
        return []
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append(
            "hardware profiles need root (cgroups, loop devices, network namespaces);"
            f" running as uid {os.geteuid()}"
        )
    problems += _cgroup_problems(profiles)
    if wants_volumes:
        problems += _volume_problems()
    if wants_devices:
        problems += _device_problems()
    if wants_links:
        problems += _link_problems(profiles)
    return problems


def _cgroup_problems(profiles: list[Profile]) -> list[str]:
    """Each cgroup controller the profiles need that is missing or cannot be written."""
    layout = detect()
    needed = _controllers_needed(profiles, layout.version)
    if not needed:
        return []
    if layout.version == 0:
        return ["no cgroup filesystem is mounted under /sys/fs/cgroup"]
    problems = []
    for controller, use in needed.items():
        name = "blkio" if controller == "io" and layout.version == 1 else controller
        if not layout.available(controller):
            problems.append(f"cgroup v{layout.version} controller {name} is not available (needed for {use})")
        elif not os.access(layout.root_of(controller), os.W_OK):
            problems.append(
                f"cgroup v{layout.version} controller {name} is read-only at {layout.root_of(controller)}"
                f" (needed for {use}; a container needs --privileged or a writable cgroup mount)"
            )
    return problems


def _controllers_needed(profiles: list[Profile], version: int) -> dict[str, str]:
    """The cgroup controllers the profiles use, each with what it is for (said in the message)."""
    needed: dict[str, str] = {}
    if any(p.cpus for p in profiles):
        needed["cpu"] = "cpus (CPU quota)"
        if version == 1:
            needed["cpuacct"] = "cpus (CPU time read-out)"
    if any(p.cpus and p.cpus.cpuset for p in profiles):
        needed["cpuset"] = "cpuset"
    if any(p.memory for p in profiles):
        needed["memory"] = "memory limits"
    if any(v.throttled for p in profiles for v in p.volumes.values()):
        needed["io"] = "volume IOPS/bandwidth throttling"
    return needed


def _volume_problems() -> list[str]:
    """Loop devices and the tools that make, format and mount a volume on one."""
    problems = []
    if not Path("/dev/loop-control").exists():
        problems.append("no loop devices (/dev/loop-control is missing; modprobe loop)")
    elif not os.access("/dev/loop-control", os.R_OK | os.W_OK):
        problems.append("loop devices are not usable: /dev/loop-control is not writable")
    return problems + _missing_tools(["losetup", "mkfs.ext4", "mount", "umount"], "volumes")


def _device_problems() -> list[str]:
    """FUSE, which serves a device model's file to its loop device."""
    problems = [] if Path("/dev/fuse").exists() else ["no /dev/fuse (device models are served through FUSE)"]
    return problems + _missing_tools(["fusermount3"], "device models; apt-get install fuse3")


def _link_problems(profiles: list[Profile]) -> list[str]:
    """The tools a link needs; when they are all there, whether a namespace can be made at all."""
    missing = _missing_tools(["ip", "tc", "nsenter"], "links")
    if any(p.link and p.link.rtt_ms for p in profiles):
        missing += _missing_tools(["iptables"], "a link's round trip (NFQUEUE)")
    return missing or _probe_netns()


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
