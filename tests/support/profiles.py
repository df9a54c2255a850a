"""Shared by the profile tests: what a leftover checker would find."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from caplab.profiles.cgroup import detect


def leftovers() -> list[str]:
    """Everything named caplab-* that the kernel still holds: what a checker would grep for."""
    found = [str(p) for p in Path("/sys/fs/cgroup").glob("*/caplab*")]
    for argv in (["losetup", "-a"], ["ip", "netns", "list"], ["ip", "-o", "link", "show"]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
        except FileNotFoundError:
            continue
        found += [f"{argv[0]}: {line}" for line in out.splitlines() if "caplab-" in line]
    # A device model's mounts (its FUSE file and its ext4) and its daemon carry the run's pid.
    mounts = Path("/proc/mounts").read_text().splitlines()
    found += [f"mount: {line}" for line in mounts if re.search(r"caplab-\d+-", line)]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "caplab.profiles.device" in command and re.search(r"caplab-\d+-", command):
                found.append(f"daemon: {command.strip()}")
    return found


def left_behind(before: set[str]) -> list[str]:
    """What caplab runs that have ended, or this process itself, left behind (other jobs on this
    machine — a test on the other xdist worker — make caplab-* resources too: those of another live
    process are theirs, still in use)."""

    def ended(item: str) -> bool:
        owner = re.search(r"caplab-(\d+)-", item)
        if owner is None or int(owner.group(1)) == os.getpid():
            return True
        return not Path(f"/proc/{owner.group(1)}").exists()

    return [item for item in leftovers() if item not in before and ended(item)]


def stray() -> list[str]:
    """Leftovers, less those of another live process: a study or test running beside this one
    on the machine holds its own caplab-* resources, still in use and not this test's to judge."""
    me = os.getpid()

    def someone_elses(item: str) -> bool:
        owner = re.search(r"caplab-(\d+)-", item)
        return owner is not None and int(owner.group(1)) != me and Path(f"/proc/{owner.group(1)}").exists()

    return [item for item in leftovers() if not someone_elses(item)]


def _ours(pid: int) -> bool:
    """Whether process ``pid`` descends from this one (a caplab this test started)."""
    while pid > 1:
        if pid == os.getpid():
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        found = re.search(r"^PPid:\s+(\d+)", status, re.M)
        pid = int(found.group(1)) if found else 0
    return False


@contextlib.contextmanager
def outweighing_the_neighbours() -> Iterator[None]:
    """For the block, every CPU group a caplab started by this test makes gets the highest CPU
    weight as it appears: on a machine busy with other jobs its quota is then what holds a role
    back, as on a machine of its own, and a known answer measures the quota, not the neighbours.
    (caplab leaves the weight at the default: raised for every study, an oversubscribed one's
    roles would starve its own generator.)"""
    layout = detect()
    root = layout.root_of("cpu")
    weight = ("cpu.shares", "262144") if layout.version == 1 else ("cpu.weight", "10000")
    stop = threading.Event()
    done: set[Path] = set()

    def raise_new_groups() -> None:
        while not stop.wait(0.02):
            for group in root.glob("caplab-*"):
                owner = re.match(r"caplab-(\d+)-", group.name)
                if group in done or owner is None or not _ours(int(owner.group(1))):
                    continue
                with contextlib.suppress(OSError):
                    (group / weight[0]).write_text(weight[1])
                    done.add(group)

    watcher = threading.Thread(target=raise_new_groups, name="outweigh", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=5)
