"""Placement: the generator and the system on separate CPUs, planned from the host's CPUs and the
study's ``isolation``, applied as two cpusets, and removed after — also when the cell fails."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from caplab.profiles import ProfileError
from caplab.profiles.cgroup import CgroupLayout, detect
from caplab.profiles.placement import (
    CpuPlacement,
    Placed,
    format_cpus,
    parse_cpus,
    plan_placement,
    process_cpuset,
)
from caplab.systems.process import RunningServer
from support.studies import caplab

V1 = CgroupLayout(version=1, v1_mounts={"cpuset": Path("/sys/fs/cgroup/cpuset")})
NO_CPUSET = CgroupLayout(version=1, v1_mounts={"cpu": Path("/sys/fs/cgroup/cpu")})


def test_cpu_lists_read_and_written_in_the_kernels_form() -> None:
    assert parse_cpus("0,2-3") == [0, 2, 3]
    assert format_cpus([0, 1, 2, 5]) == "0-2,5"
    with pytest.raises(ProfileError):
        parse_cpus("2-1")


def test_by_default_the_generator_takes_the_first_cpu_and_the_system_the_rest() -> None:
    placement = plan_placement(None, [0, 1, 2, 3], V1)
    assert (placement.generator, placement.system) == ("0", "1-3")
    assert placement.describe() == "generator on CPU 0; roles on CPUs 1-3"


def test_one_cpu_or_no_cpuset_or_shared_is_said_not_hidden() -> None:
    one = plan_placement(None, [0], V1)
    assert not one.isolated and "one CPU" in one.describe() and "competed" in one.describe()
    assert "no cpuset" in plan_placement(None, [0, 1], NO_CPUSET).describe()
    assert "shared was asked for" in plan_placement("shared", [0, 1], V1).describe()


def test_named_cpus_must_exist_and_not_overlap() -> None:
    assert plan_placement({"generator": "1", "system": "0"}, [0, 1], V1).system == "0"
    with pytest.raises(ProfileError, match="overlap"):
        plan_placement({"generator": "0", "system": "0-1"}, [0, 1], V1)
    with pytest.raises(ProfileError, match="CPU"):
        plan_placement({"generator": "0", "system": "7"}, [0, 1], V1)


def allowed(pid: int | str = "self") -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no Cpus_allowed_list")


def require_cpuset() -> None:
    if os.geteuid() != 0 or not detect().available("cpuset") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs root, a cpuset controller and two CPUs")


def test_the_generator_and_the_system_run_apart_and_everything_goes_after() -> None:
    require_cpuset()
    layout = detect()
    home, before = process_cpuset(os.getpid(), layout), allowed()
    placement = CpuPlacement("0", "1")
    with Placed(placement) as place:
        assert allowed() == "0", "caplab's process, all its threads, on the generator's CPU"
        started = subprocess.run(
            [*place.system_prefix(), "sh", "-c", "sleep 0.01; grep Cpus_allowed_list /proc/self/status"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert started.stdout.split()[-1] == "1", "the system's command and what it starts"
        daemon = subprocess.run(
            ["sh", "-c", "grep Cpus_allowed_list /proc/self/status"], capture_output=True, text=True
        )
        assert daemon.stdout.split()[-1] == "0", "caplab's own children (daemons) stay on its CPU"
        groups = [g.directory("cpuset") for g in (place.generator, place.system) if g is not None]
        assert all(g.is_dir() for g in groups)
    assert process_cpuset(os.getpid(), layout) == home and allowed() == before
    assert not any(g.exists() for g in groups)


def test_a_failure_inside_still_removes_the_placement() -> None:
    require_cpuset()
    before = allowed()
    groups: list[Path] = []
    with pytest.raises(RuntimeError), Placed(CpuPlacement("0", "1")) as place:
        groups = [g.directory("cpuset") for g in (place.generator, place.system) if g is not None]
        raise RuntimeError("the cell failed")
    assert allowed() == before
    assert groups and not any(g.exists() for g in groups)


def test_a_running_system_moved_in_goes_back_where_it_was() -> None:
    require_cpuset()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        home = process_cpuset(sleeper.pid, detect())
        with Placed(CpuPlacement("0", "1")) as place:
            place.move_system([sleeper.pid])
            assert allowed(sleeper.pid) == "1"
        assert sleeper.poll() is None, "a system caplab did not start is not killed"
        assert process_cpuset(sleeper.pid, detect()) == home
    finally:
        sleeper.kill()
        sleeper.wait()


def orphaned_groups() -> set[str]:
    """caplab cpusets whose creating process has ended (``caplab-<pid>-…``): leftovers. Others
    belong to runs going on meanwhile (tests in parallel)."""
    root = detect().root_of("cpuset")
    return {p.name for p in root.glob("caplab-*") if not Path(f"/proc/{p.name.split('-')[1]}").exists()}


def test_find_capacity_runs_apart_when_asked_and_leaves_nothing(plain_server: RunningServer) -> None:
    """`--generator-cpus 0 --sut-cpus 1`: the answer says where each ran, the server ran on CPU 1
    during the search and is back on every CPU after, and no cpuset is left behind."""
    require_cpuset()
    before, server = orphaned_groups(), plain_server.process.pid
    home = allowed(server)
    done = caplab(
        "find-capacity", f"http://{plain_server.address}/", "--slo", "p99<=50ms",
        "--sut-pid", str(server), "--generator-cpus", "0", "--sut-cpus", "1",
        "--start", "200", "--max", "400", "--trial", "1s", "--confirm", "1s", "--repeats", "1",
        "--warmup", "200ms", "--json", timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    answer = json.loads(done.stdout)
    assert answer["placement"] == {
        "generator": "0",
        "system": "1",
        "text": "generator on CPU 0; roles on CPU 1",
    }
    assert "generator on CPU 0; roles on CPU 1" in done.stderr
    demands = {d["resource"]: d for d in (answer["limit"] or {}).get("evidence", {}).get("demands", [])}
    assert "cpu:host" not in demands, "on CPUs of its own the system is judged by its roles' CPUs"
    assert allowed(server) == home
    assert orphaned_groups() <= before
