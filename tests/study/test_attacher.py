"""The attacher against real processes: a process that matches is put on its role's profile, also
when it matched only after an exec; what it has settled is not read again.

The hardware is a stand-in that records attachments (the cgroups themselves are tested in
tests/profiles): what is under test here is which processes a pass finds, and what it reads."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from caplab.collect import proctable
from caplab.study.hardware import Attacher


class RecordingHardware:
    """A cell's hardware as the attacher sees it: each role's processes, and attach()."""

    def __init__(self, roles: list[str]) -> None:
        self.groups: dict[str, list[int]] = {r: [] for r in roles}

    def pids(self, role: str) -> list[int]:
        return list(self.groups[role])

    def attach(self, role: str, pid: int) -> None:
        self.groups[role].append(pid)


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def sleeper(tag: str) -> list[str]:
    return [sys.executable, "-c", "import time; time.sleep(60)", tag]


def test_a_matching_process_is_attached_once_and_others_are_left(
    spawned: list[subprocess.Popen[bytes]],
) -> None:
    tag = f"caplab-attach-{uuid.uuid4().hex}"
    server = subprocess.Popen(sleeper(f"{tag}-server"))
    other = subprocess.Popen(sleeper(f"{tag}-other"))
    spawned += [server, other]
    hw = RecordingHardware(["server"])
    attacher = Attacher(hw, {"server": f"{tag}-server"})  # type: ignore[arg-type]
    deadline = time.monotonic() + 5
    while not hw.groups["server"] and time.monotonic() < deadline:
        attacher.attach_now()
        time.sleep(0.05)
    attacher.attach_now()
    assert hw.groups["server"] == [server.pid]
    assert attacher.outside["server"]["processes"] == 1
    assert 0 <= attacher.outside["server"]["longest_s"] < 5


def test_a_process_that_execs_into_a_match_while_young_is_attached(
    spawned: list[subprocess.Popen[bytes]],
) -> None:
    # A launcher shows its own command line until it execs the server: the first pass reads the
    # launcher's, and a later pass must read the process again.
    tag = f"caplab-attach-{uuid.uuid4().hex}"
    # The launcher's own command line carries the tag reversed, so only the exec'd one matches.
    become = (
        "import os, sys, time; time.sleep(0.5); os.execv(sys.executable, [sys.executable, '-c', "
        "'import time; time.sleep(60)', sys.argv[1][::-1]])"
    )
    launcher = subprocess.Popen([sys.executable, "-c", become, tag[::-1]])
    spawned.append(launcher)
    hw = RecordingHardware(["server"])
    attacher = Attacher(hw, {"server": tag})  # type: ignore[arg-type]
    attacher.attach_now()
    assert hw.groups["server"] == []
    deadline = time.monotonic() + 5
    while not hw.groups["server"] and time.monotonic() < deadline:
        time.sleep(0.1)
        attacher.attach_now()
    assert hw.groups["server"] == [launcher.pid]


def test_a_pass_reads_no_command_line_of_a_process_it_has_settled(
    spawned: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = f"caplab-attach-{uuid.uuid4().hex}"
    spawned += [subprocess.Popen(sleeper(f"{tag}-{i}")) for i in range(20)]
    time.sleep(proctable.YOUNG_S + 0.2)  # old enough not to exec into a match any more
    reads: list[int] = []
    real = proctable.cmdline

    def counting(pid: int) -> str:
        reads.append(pid)
        return real(pid)

    monkeypatch.setattr("caplab.study.hardware.cmdline", counting)
    attacher = Attacher(RecordingHardware(["server"]), {"server": f"{tag}-absent"})  # type: ignore[arg-type]
    attacher.attach_now()
    first = set(reads)
    assert {p.pid for p in spawned} <= first
    reads.clear()
    attacher.attach_now()
    assert not {p.pid for p in spawned} & set(reads), "settled processes were read again"
