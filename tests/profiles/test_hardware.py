"""A cell's hardware as a whole: processes join their role from the first instruction or when
found later, everything goes after the cell (also on errors and Ctrl-C), a crashed run's
leftovers are swept, and a machine that lacks a mechanism is told which."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from caplab.profiles import (
    CellHardware,
    LinkClass,
    Profile,
    ProfileError,
    VolumeClass,
    check_support,
    parse_size,
    sweep_leftovers,
)
from support.profiles import leftovers, stray

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]
FAMILY = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"  # noqa: E501


def cgroup_of(pid: int, controller: str) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return ""


def children_of(pid: int, timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == pid]
        if found:
            return found
        time.sleep(0.05)
    return []


def _ppid(proc: Path) -> int:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError):
        return -1


def test_a_launched_process_and_its_children_run_in_the_role_from_the_start(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build("small", cpus=1, memory="256M")
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        parent = subprocess.Popen([*hw.launch_prefix("app"), sys.executable, "-c", FAMILY])
        try:
            (child,) = children_of(parent.pid)
            for pid in (parent.pid, child):
                assert cgroup_of(pid, "memory") == f"/{hw.prefix}-app"
                assert cgroup_of(pid, "cpu") == f"/{hw.prefix}-app"
        finally:
            parent.kill()
            parent.wait()
        # The child outlived its parent: removal kills it with the role's group.


def test_a_running_process_and_its_children_are_attached_later(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build("small", cpus=1, memory="256M")
    require(profile)
    parent = subprocess.Popen([sys.executable, "-c", FAMILY])
    try:
        (child,) = children_of(parent.pid)
        with CellHardware(tmp_path, {"app": profile}) as hw:
            hw.attach("app", parent.pid)
            assert cgroup_of(parent.pid, "memory") == cgroup_of(child, "memory") == f"/{hw.prefix}-app"
            assert hw.pids("app") == sorted([parent.pid, child])
    finally:
        parent.kill()
        parent.wait()


def test_everything_is_removed_when_the_cell_fails_or_is_interrupted(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build(
        "all",
        cpus=1,
        memory="128M",
        volumes={"data": "hdd"},
        link="100mbit",
        volume_classes={"hdd": VolumeClass(size=parse_size("64M"), write_iops=200)},
        link_classes={"100mbit": LinkClass.parse("100mbit")},
    )
    require(profile)
    for error in (RuntimeError("the cell failed"), KeyboardInterrupt()):
        with pytest.raises(type(error)), CellHardware(tmp_path, {"db": profile}) as hw:
            assert hw.volume_paths["db/data"].is_mount()
            subprocess.Popen([*hw.launch_prefix("db"), *SLEEPER])  # still running at removal
            raise error
        assert stray() == []
        assert not hw.volume_paths
        assert not (tmp_path / "volumes" / "db" / "data").exists()


def test_a_half_made_cell_is_removed_before_the_error_is_raised(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    good = Profile.build("good", cpus=1, memory="128M")
    bad = Profile.build("bad", cpus=1, cpuset="999")  # no such host CPU: the kernel refuses it
    require(good, bad)
    with pytest.raises(ProfileError, match=r"cpuset.cpus"), CellHardware(tmp_path, {"a": good, "b": bad}):
        pass
    assert stray() == []


def test_a_crashed_runs_leftovers_are_swept(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build(
        "all",
        cpus=1,
        memory="128M",
        volumes={"data": "hdd"},
        link="100mbit",
        volume_classes={"hdd": VolumeClass(size=parse_size("64M"), write_iops=200)},
        link_classes={"100mbit": LinkClass.parse("100mbit")},
    )
    require(profile)
    crash = textwrap.dedent(
        f"""
        import os, signal, subprocess
        from pathlib import Path
        from caplab.profiles import *
        hdd = VolumeClass(size=parse_size("64M"), write_iops=200)
        profile = Profile.build("all", cpus=1, memory="128M", volumes={{"data": "hdd"}}, link="100mbit",
            volume_classes={{"hdd": hdd}}, link_classes={{"100mbit": LinkClass.parse("100mbit")}})
        hw = CellHardware(Path({str(tmp_path)!r}), {{"db": profile}})
        hw.create()
        subprocess.Popen(hw.launch_prefix("db") + ["sleep", "30"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", crash], env=env, timeout=60, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert leftovers(), "the crashed run left nothing to sweep"
    swept = sweep_leftovers()
    assert any(line.startswith("detached /dev/loop") for line in swept), swept
    assert any(line.startswith("deleted network namespace") for line in swept), swept
    assert stray() == []


def test_a_live_runs_resources_are_not_swept(tmp_path: Path, require: Callable[..., None]) -> None:
    profile = Profile.build("small", memory="128M")
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        assert sweep_leftovers() == []
        assert hw.usage("app")["memory"]["limit_bytes"] == 128 << 20  # its group is still there


def test_a_machine_without_the_tools_is_told_which(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    profile = Profile.build(
        "all",
        volumes={"data": "hdd"},
        link="100mbit",
        volume_classes={"hdd": VolumeClass(size=parse_size("64M"))},
        link_classes={"100mbit": LinkClass.parse("100mbit")},
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no tool is found
    problems = check_support([profile])
    assert "losetup is not installed (needed for volumes)" in problems
    assert "ip is not installed (needed for links)" in problems
    assert "tc is not installed (needed for links)" in problems
    assert check_support([Profile("bare")]) == []


def test_an_unknown_role_is_named(tmp_path: Path) -> None:
    hw = CellHardware(tmp_path, {})
    with pytest.raises(ProfileError, match=r"no hardware for role 'db' in this cell \(roles: none\)"):
        hw.launch_prefix("db")
    with pytest.raises(ValueError, match=r"role name 'a b'"):
        CellHardware(tmp_path, {"a b": Profile("x")})


class InterruptsItsRemoval:
    """A resource whose removal is interrupted by Ctrl-C: the user presses it mid-cleanup."""

    kind = "interrupt"

    def create(self) -> None:
        pass

    def procs_files(self) -> list[Path]:
        return []

    def enter_argv(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        pass

    def usage(self) -> dict[str, int | float | str]:
        return {}

    def remove(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)  # the signal arrives here, in the middle of removal


def test_ctrl_c_during_removal_waits_until_everything_is_removed(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build(
        "all",
        cpus=1,
        volumes={"data": "hdd"},
        link="100mbit",
        volume_classes={"hdd": VolumeClass(size=parse_size("64M"), write_iops=200)},
        link_classes={"100mbit": LinkClass.parse("100mbit")},
    )
    require(profile)
    with pytest.raises(KeyboardInterrupt), CellHardware(tmp_path, {"db": profile}) as hw:
        hw.roles["db"].resources.append(InterruptsItsRemoval())  # removed first: resources go in reverse
    assert stray() == []
