"""Shared by the profile tests: what a leftover checker would find."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def leftovers() -> list[str]:
    """Everything named caplab-* that the kernel still holds: what a checker would grep for."""
    found = [str(p) for p in Path("/sys/fs/cgroup").glob("*/caplab*")]
    for argv in (["losetup", "-a"], ["ip", "netns", "list"], ["ip", "-o", "link", "show"]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
        except FileNotFoundError:
            continue
        found += [f"{argv[0]}: {line}" for line in out.splitlines() if "caplab-" in line]
    return found


def left_behind(before: set[str]) -> list[str]:
    """What caplab runs that have ended left behind (other jobs on this machine make caplab-*
    resources too: those of a live process are theirs, still in use)."""

    def ended(item: str) -> bool:
        owner = re.search(r"caplab-(\d+)-", item)
        return owner is None or not Path(f"/proc/{owner.group(1)}").exists()

    return [item for item in leftovers() if item not in before and ended(item)]
