"""CPU quota against the real kernel: a process that burns CPU gets what its profile grants."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, Profile
from caplab.profiles.cpu import PERIOD_US

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


@pytest.mark.slow
def test_a_burner_under_half_a_cpu_uses_half_a_cpu(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build("half", cpus=0.5)
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        outweigh_the_neighbours(hw, "app")
        burner = subprocess.Popen([*hw.launch_prefix("app"), sys.executable, "-c", BURN])
        try:
            time.sleep(0.5)  # past start-up, into the steady quota
            first = hw.usage("app")["cpu"]
            time.sleep(3.0)  # 300 quota periods
            last = hw.usage("app")["cpu"]
        finally:
            burner.kill()
            burner.wait()
    # Judged on the cgroup's own clock: the CPU it used per quota period it ran in, as the kernel
    # counted both. A burner is runnable in every period, so each grants it its quota and no more;
    # a busy host shows as fewer periods, not as a smaller share of the wall clock.
    periods = int(last["periods"]) - int(first["periods"])
    used = (float(last["cpu_seconds"]) - float(first["cpu_seconds"])) / (periods * PERIOD_US / 1e6)
    print(f"burner under cpus 0.5: {used:.3f} CPU over {periods} periods")
    assert periods > 0, "the quota's periods never ran"
    assert 0.45 <= used <= 0.55, f"used {used:.3f} CPU a period under a 0.5 CPU quota"
    assert int(last["throttled_periods"]) > int(first["throttled_periods"]), "the quota never throttled"


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
