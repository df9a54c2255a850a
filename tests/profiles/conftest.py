"""Fixtures for the hardware-profile tests: they run against the real kernel (cgroups, loop
devices, network namespaces, tc), skip naming the missing mechanism, and assert after every test
that nothing named ``caplab-*`` is left behind."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caplab.profiles import Profile, check_support


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


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(leftovers())
    yield
    left = [item for item in leftovers() if item not in before]
    assert not left, f"left behind: {left}"


@pytest.fixture
def require() -> Callable[..., None]:
    """``require(profile, …)`` skips the test with the exact mechanism this machine lacks."""

    def check(*profiles: Profile) -> None:
        problems = check_support(profiles)
        if problems:
            pytest.skip("; ".join(problems))

    return check
