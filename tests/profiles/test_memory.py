"""Memory limit against the real kernel: past the limit a process is OOM-killed, and the
read-out says so."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from caplab.profiles import CellHardware, Profile

# bytearray() writes every page, so all 256 MiB must be resident at once: no swap, no escape.
ALLOCATE = "b = bytearray(256 << 20); print('survived')"


def test_a_child_allocating_past_its_limit_is_oom_killed_and_reported(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build("tiny", memory="64M")
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        done = subprocess.run(
            [*hw.launch_prefix("app"), sys.executable, "-c", ALLOCATE],
            capture_output=True,
            text=True,
            timeout=30,
        )
        memory = hw.usage("app")["memory"]
    assert done.returncode == -signal.SIGKILL, f"exit {done.returncode}: {done.stdout}{done.stderr}"
    assert memory["oom_kills"] == 1
    assert memory["limit_bytes"] == 64 << 20
    assert int(memory["peak_bytes"]) >= 0.95 * (64 << 20), "the peak never reached the limit"


def test_a_child_within_its_limit_runs_and_its_use_is_counted(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build("small", memory="128M")
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        code = "b = bytearray(32 << 20); import time; time.sleep(0.3)"
        child = subprocess.Popen([*hw.launch_prefix("app"), sys.executable, "-c", code])
        child.wait(timeout=30)
        memory = hw.usage("app")["memory"]
    assert child.returncode == 0
    assert memory["oom_kills"] == 0
    assert int(memory["peak_bytes"]) >= 32 << 20
