"""CPU quota against the real kernel: a process that burns CPU gets what its profile grants."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, Profile
from caplab.profiles.cpu import PERIOD_US, period_us

BURN = "while True: pass"


def outweigh_the_neighbours(hw: CellHardware, role: str) -> None:
    """A shared, busy host would starve the burner below its quota, and the test would measure
    the neighbours; a high CPU weight makes the quota the only thing that holds it back."""
    group = hw.roles[role].group
    assert group is not None
    if group.layout.version == 1:
        group.write("cpu", "cpu.shares", "262144")
    else:
        group.write("cpu", "cpu.weight", "10000")


def burn_under(hw: CellHardware, role: str, seconds: float) -> tuple[float, int, dict[str, float]]:
    """A burner on the role's profile for ``seconds``: the CPU it used per quota period it ran in,
    as the kernel counted both, how many periods, and the role's CPU figures at the end.

    Judged on the cgroup's own clock: a burner is runnable in every period, so each grants it its
    quota and no more; a busy host shows as fewer periods, not as a smaller share of the wall clock."""
    outweigh_the_neighbours(hw, role)
    burner = subprocess.Popen([*hw.launch_prefix(role), sys.executable, "-c", BURN])
    try:
        time.sleep(0.5)  # past start-up, into the steady quota
        first = hw.usage(role)["cpu"]
        time.sleep(seconds)
        last = hw.usage(role)["cpu"]
    finally:
        burner.kill()
        burner.wait()
    periods = int(last["periods"]) - int(first["periods"])
    assert periods > 0, "the quota's periods never ran"
    assert int(last["throttled_periods"]) > int(first["throttled_periods"]), "the quota never throttled"
    used = (float(last["cpu_seconds"]) - float(first["cpu_seconds"])) / (
        periods * float(last["period_us"]) / 1e6
    )
    return used, periods, {k: float(v) for k, v in last.items()}


@pytest.mark.slow
def test_a_burner_under_half_a_cpu_uses_half_a_cpu(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build("half", cpus=0.5)
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        used, periods, cpu = burn_under(hw, "app", 3.0)  # 300 quota periods
    print(f"burner under cpus 0.5: {used:.3f} CPU over {periods} periods")
    assert cpu["period_us"] == PERIOD_US
    assert 0.45 <= used <= 0.55, f"used {used:.3f} CPU a period under a 0.5 CPU quota"


@pytest.mark.slow
def test_a_share_below_the_kernels_floor_gets_a_longer_period_not_more_cpu(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    """One core at a sixteenth of a host core: 0.625 ms every 10 ms is below the kernel's 1 ms
    floor, so the period stretches to 16 ms (1 ms of it) — the share stays a sixteenth."""
    profile = Profile.build("small", cpus=1)
    require(profile)
    with CellHardware(tmp_path, {"app": profile}, scale=0.0625) as hw:
        used, periods, cpu = burn_under(hw, "app", 2.0)
    print(f"burner under 1/16 CPU: {used:.4f} CPU over {periods} periods of {cpu['period_us']:g} us")
    assert cpu["period_us"] == 16_000 and cpu["quota_host_cpus"] == 0.0625
    assert 0.055 <= used <= 0.07, f"used {used:.4f} CPU a period under a 0.0625 CPU quota"


def test_the_period_is_ten_ms_unless_the_quota_would_be_under_one() -> None:
    assert [period_us(c) for c in (2.0, 0.5, 0.1, 0.0625, 0.01)] == [10_000, 10_000, 10_000, 16_000, 100_000]


def test_scale_turns_profile_cores_into_a_host_quota(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build("large", cpus=8)
    require(profile)
    with CellHardware(tmp_path, {"app": profile}, scale=0.25) as hw:
        cpu = hw.usage("app")["cpu"]
        assert cpu["quota_host_cpus"] == 2.0
        assert cpu["profile_cpus"] == 8
        assert hw.describe()["app"][1] == "8 cores, emulated as 2.0 host CPUs"


def test_a_cpuset_pins_the_role_to_those_host_cpus(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build("pinned", cpus=1, cpuset="0")
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        done = subprocess.run(
            [
                *hw.launch_prefix("app"),
                sys.executable,
                "-c",
                "import os; print(sorted(os.sched_getaffinity(0)))",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    assert done.stdout.strip() == "[0]"
