"""Removal of what a crashed earlier run left behind: ``caplab-*`` cgroups, mounts and loop
devices, network namespaces and veths. Only what a dead process created is touched (names carry
the creator's pid), unless ``everything`` is asked for."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from caplab.profiles.cgroup import detect, remove_directories
from caplab.profiles.errors import ProfileError, run_tool
from caplab.profiles.links import NETNS_DIR, remove_netns
from caplab.profiles.volumes import clear_v1_rules, device_of

_OWNED = re.compile(r"caplab-(\d+)-[0-9a-f]+")


def _stale(name: str, everything: bool) -> bool:
    """A ``caplab-<pid>-…`` name whose creator no longer runs (or any, with ``everything``)."""
    m = _OWNED.match(name)
    if not m:
        return False
    if everything:
        return True
    try:
        os.kill(int(m.group(1)), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def sweep_leftovers(everything: bool = False) -> list[str]:
    """Remove stale caplab resources; returns one line per thing removed (or that failed)."""
    done: list[str] = []
    _sweep_cgroups(everything, done)
    _sweep_devices(everything, done)
    _sweep_volumes(everything, done)
    _sweep_links(everything, done)
    return done


def _sweep_cgroups(everything: bool, done: list[str]) -> None:
    for root in detect().roots():
        for directory in sorted(root.glob("caplab-*")):
            if directory.is_dir() and _stale(directory.name, everything):
                try:
                    remove_directories([directory])
                    done.append(f"removed cgroup {directory}")
                except ProfileError as exc:
                    done.append(f"could not remove cgroup {directory}: {exc}")


def _mounts_of(device: str) -> list[str]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[1:2] == [device]:
            mounts.append(left.split()[4])
    return mounts


def _sweep_volumes(everything: bool, done: list[str]) -> None:
    listing = run_tool(["losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"],
                       "sweep: listing loop devices", check=False)  # fmt: skip
    layout = detect()
    for line in listing.splitlines():
        device, _, back_file = line.partition(" ")
        back_file = back_file.replace(" (deleted)", "")
        if not _stale(Path(back_file).name, everything):
            continue
        if layout.version == 1 and layout.available("io"):
            clear_v1_rules(layout.root_of("io"), device_of(device))
        for mount_point in _mounts_of(device):
            run_tool(["umount", "-l", mount_point], f"sweep: unmounting {mount_point}", check=False)
            done.append(f"unmounted {mount_point}")
        run_tool(["losetup", "-d", device], f"sweep: detaching {device}", check=False)
        done.append(f"detached {device} ({back_file})")
        with contextlib.suppress(OSError):
            Path(back_file).unlink()


def _sweep_devices(everything: bool, done: list[str]) -> None:
    """Device models' FUSE mounts (source ``caplab-device``) under a dead run's directory
    (``…/devices/caplab-<pid>-…/NAME.fuse``): the ext4 and loop devices on each, then the FUSE
    mount and the backing file beside it. (The daemon stops itself when its parent dies.)"""
    fuse_mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[1:2] == ["caplab-device"]:
            fuse_mounts.append(Path(left.split()[4]))
    listing = run_tool(["losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"],
                       "sweep: listing loop devices", check=False)  # fmt: skip
    for fuse_dir in fuse_mounts:
        if not any(_stale(part, everything) for part in fuse_dir.parts):
            continue
        for line in listing.splitlines():
            device, _, back_file = line.partition(" ")
            if Path(back_file.replace(" (deleted)", "")).parent != fuse_dir:
                continue
            for mount_point in _mounts_of(device):
                run_tool(["umount", "-l", mount_point], f"sweep: unmounting {mount_point}", check=False)
                done.append(f"unmounted {mount_point}")
            run_tool(["losetup", "-d", device], f"sweep: detaching {device}", check=False)
            done.append(f"detached {device} ({back_file})")
        run_tool(["fusermount3", "-u", "-z", str(fuse_dir)], f"sweep: unmounting {fuse_dir}", check=False)
        done.append(f"unmounted the device model at {fuse_dir}")
        with contextlib.suppress(OSError):
            fuse_dir.with_suffix(".backing").unlink()


def _sweep_links(everything: bool, done: list[str]) -> None:
    live_netns = set()
    if NETNS_DIR.is_dir():
        for entry in sorted(NETNS_DIR.glob("caplab-*")):
            if _stale(entry.name, everything):
                remove_netns(entry.name)
                done.append(f"deleted network namespace {entry.name}")
            else:
                live_netns.add(entry.name)
    listing = run_tool(["ip", "-o", "link", "show", "type", "veth"], "sweep: listing veths", check=False)
    for line in listing.splitlines():
        m = re.match(r"\d+: (caplab-[0-9a-f]+)[@:]", line)
        if not m:
            continue
        peer = re.search(r"link-netns (\S+)", line)
        if peer and peer.group(1) in live_netns:
            continue
        run_tool(["ip", "link", "del", m.group(1)], f"sweep: deleting {m.group(1)}", check=False)
        done.append(f"deleted veth {m.group(1)}")
