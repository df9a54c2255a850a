"""Fixtures for the hardware-profile tests: they run against the real kernel (cgroups, loop
devices, network namespaces, tc), skip naming the missing mechanism, and assert after every test
that nothing named ``caplab-*`` is left behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from support.profiles import leftovers
from support.require import require_profiles


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(leftovers())
    yield
    left = [item for item in leftovers() if item not in before]
    assert not left, f"left behind: {left}"


@pytest.fixture
def require() -> Callable[..., None]:
    """``require(profile, …)`` skips the test with the exact mechanism this machine lacks (fails
    under ``CAPLAB_REQUIRE_PROFILES=1``)."""
    return require_profiles
