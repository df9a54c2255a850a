"""pgha's settings are checked before anything starts (Patroni's own rule for ttl, loop_wait and
retry_timeout among them), a failover's phases read as offsets from the fault, and a switchover
Patroni's API stopped waiting for is watched on, not taken as refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from caplab.systems.pgha import HaError, HaSettings, Phases
from caplab.systems.pgha.failover import switchover_under_way
from caplab.systems.pgha.patroni import RestAnswer


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"ttl": 10, "loop_wait": 2, "retry_timeout": 5}, "need ttl ≥ loop_wait + 2 × retry_timeout"),
        ({"loop_wait": 0}, "each ≥ 1 s"),
        ({"nodes": 0}, "--nodes must be 1…9"),
        ({"pg_port": 80}, "--port must be 1024…"),
        ({"etcd_port": 65535}, "--etcd-port must be 1024…"),
        ({"databases": -1}, "--databases must be 0…5000"),
    ],
)
def test_settings_patroni_would_refuse_or_misuse_are_refused_first(
    options: dict[str, Any], says: str
) -> None:
    with pytest.raises(HaError, match=re.escape(says)):
        HaSettings(Path("/nonexistent"), **options).check()


def test_the_defaults_and_a_fast_setting_pass() -> None:
    HaSettings(Path("/nonexistent")).check()
    HaSettings(Path("/nonexistent"), nodes=3, ttl=10, loop_wait=2, retry_timeout=4, sync=True).check()


def test_phases_are_offsets_from_the_fault() -> None:
    phases = Phases(100.0, 109.25, 109.3, 109.4, 109.5).as_dict()
    assert phases["after_fault_s"] == {"detected": 9.25, "elected": 9.3, "promoted": 9.4, "writable": 9.5}
    assert phases["at"]["fault"] == 100.0 and phases["resolution_s"] > 0


@pytest.mark.parametrize(
    ("status", "body", "under_way"),
    [
        (200, 'Successfully switched over to "node1"', True),
        (503, "Switchover status unknown", True),  # Patroni's API stopped waiting; the watch goes on
        (503, "Switchover failed", False),
        (412, "switchover is not possible: cluster does not have members except leader", False),
        (0, None, False),  # nothing answered
    ],
)
def test_a_switchover_patroni_stopped_waiting_for_is_still_watched(
    status: int, body: str | None, under_way: bool
) -> None:
    assert switchover_under_way(RestAnswer(status, body)) is under_way
