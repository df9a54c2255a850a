"""A device model's daemon that dies mid-cell takes the cell's disk with it: the cell fails saying
so (not with whatever its system then reported), the study goes on, and the loop device, the
mounts and the backing file are gone after the cell."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from caplab.profiles import Profile
from caplab.profiles.device_models import Hdd
from support.require import require_profiles
from support.studies import caplab, json_out, write_study

pytestmark = pytest.mark.slow  # a device made and formatted per cell


def _loops_on(backing_dir: Path) -> list[str]:
    listing = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    return [line for line in listing.splitlines() if str(backing_dir) in line]


def test_a_device_whose_daemon_dies_fails_its_cell_with_that_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cells' hardware goes here (where every user may enter), and must be gone after each.
    runtime = Path(tempfile.mkdtemp(prefix="caplab-crash-", dir="/var/tmp"))
    runtime.chmod(0o755)
    monkeypatch.setenv("CAPLAB_RUNTIME_DIR", str(runtime))
    try:
        _run_and_check(tmp_path, runtime)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _run_and_check(tmp_path: Path, runtime: Path) -> None:
    require_profiles(Profile.build("p", volumes={"data": "disk"}, device_models={"disk": Hdd(64 << 20)}))
    token = f"caplab-crash-{secrets.token_hex(4)}"
    # The phase writes to the device, kills the daemon that serves it (its FUSE mount point is the
    # device's directory with .fuse: only this cell's), then writes again and fails, as a system
    # that lost its disk does; the other case's phase only writes.
    kill = (
        "echo one > {volume.data}/a && sync && "
        'pkill -9 -f "mountpoint $(dirname $(dirname {volume.data}))/disk.fuse"; sleep 1; '
        "echo two > {volume.data}/b; sync; echo lost my disk; exit 3"
    )
    study = {
        "name": "device crash",
        "sut": {"start": f"exec sleep 300 # {token}", "roles": {"store": {"match": token, "profile": "p"}}},
        "job": {
            "role": "store",
            "phases": [{"name": "write", "run": f"{{script}} # {token}", "items": 1, "timeout": "30s"}],
        },
        "factors": {"zip": {"case": ["killed", "fine"], "script": [kill, "echo one > {volume.data}/a"]}},
        "profiles": {"p": {"volumes": {"data": "disk"}}},
        "devices": {"disk": {"model": "hdd", "size": "64M", "cache": "battery-backed"}},
    }
    path = write_study(tmp_path / "crash.yaml", study)
    done = caplab("run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "--no-report", timeout=180)
    assert done.returncode == 1, done.stderr[-3000:]
    cells = {c["factors"]["case"]: c for c in json_out(done)["cells"]}
    assert cells["killed"]["status"] == "failed"
    error = cells["killed"]["error"]
    assert error.startswith("device disk: the model's daemon died (killed by signal 9)"), error
    assert cells["fine"]["status"] == "complete", cells["fine"]["error"]
    assert _loops_on(runtime) == []
    assert str(runtime) not in Path("/proc/mounts").read_text()
    assert not list(runtime.glob("**/*.backing"))
