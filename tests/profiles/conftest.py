"""Fixtures for the hardware-profile tests: they run against the real kernel (cgroups, loop
devices, network namespaces, tc), skip naming the missing mechanism, and assert after every test
that nothing named ``caplab-*`` is left behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from support.profiles import left_behind, leftovers
from support.require import require_profiles


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(leftovers())
    yield
    # left_behind: a resource whose owner still runs is in use, by a test on the other worker.
    left = left_behind(before)
    assert not left, f"left behind: {left}"


@pytest.fixture
def require() -> Callable[..., None]:
    """``require(profile, …)`` skips the test with the exact mechanism this machine lacks (fails
    under ``CAPLAB_REQUIRE_PROFILES=1``)."""
    return require_profiles
