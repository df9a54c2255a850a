"""Volumes against the real kernel: fio on a throttled loop volume measures its class's IOPS, and
on an unthrottled one far more (the SQLIO-style baseline of the seeds, 4 KiB random writes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, Profile, ProfileError, VolumeClass, parse_size
from support.require import TOOLS
from support.require import require as require_tool

pytestmark = pytest.mark.slow  # known-answer measurements through the kernel, several seconds each

HDD = VolumeClass(size=parse_size("128M"), write_iops=200, read_iops=200)
UNTHROTTLED = VolumeClass(size=parse_size("128M"))


@pytest.fixture
def in_memory() -> Iterator[Path]:
    """A working directory on tmpfs: the images live in memory, so what fio measures is the
    volume's throttle, not a host disk that other work on the machine is keeping busy."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm to hold the volume images in memory")
    directory = Path(tempfile.mkdtemp(prefix="profiles-", dir="/dev/shm"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def fio_write_iops(prefix: list[str], directory: Path, seconds: int) -> float:
    """4 KiB random writes, direct I/O, queue depth 32 (enough queued that a
    descheduled fio never leaves the throttle's budget unused), after a one-second ramp."""
    argv = [
        *prefix, "fio", "--name=baseline", f"--directory={directory}", "--size=16M", "--rw=randwrite",
        "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=32", "--ramp_time=1",
        f"--runtime={seconds}", "--time_based", "--output-format=json",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30, check=True)
    return float(json.loads(done.stdout)["jobs"][0]["write"]["iops"])


def test_fio_on_an_hdd_volume_measures_its_iops_and_an_unthrottled_volume_far_more(
    in_memory: Path, require: Callable[..., None]
) -> None:
    require_tool(TOOLS, [] if shutil.which("fio") else ["fio is not installed (apt-get install -y fio)"])
    profile = Profile.build(
        "db", volumes={"data": "hdd", "scratch": "fast"}, volume_classes={"hdd": HDD, "fast": UNTHROTTLED}
    )
    require(profile)
    with CellHardware(in_memory, {"db": profile}) as hw:
        prefix = hw.launch_prefix("db")
        throttled = fio_write_iops(prefix, hw.volume_paths["db/data"], seconds=3)
        free = fio_write_iops(prefix, hw.volume_paths["db/scratch"], seconds=1)
        device = hw.usage("db")["volume:data"]["device"]
        assert str(device).startswith("loop")
    print(f"hdd volume: {throttled:.0f} write IOPS (class 200); unthrottled: {free:.0f}")
    assert 180 <= throttled <= 220, f"{throttled:.0f} write IOPS on a 200 IOPS volume"
    assert free > 5 * throttled, f"unthrottled volume only {free:.0f} IOPS"


def test_a_volume_larger_than_the_free_disk_is_refused_before_anything_is_made(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    free = shutil.disk_usage(tmp_path).free
    huge = VolumeClass(size=free + (1 << 30))
    profile = Profile.build("db", volumes={"data": "huge"}, volume_classes={"huge": huge})
    require(profile)
    with (
        pytest.raises(ProfileError, match=r"volume data: .* is more than the .* free under"),
        CellHardware(tmp_path, {"db": profile}),
    ):
        pass
    assert not list((tmp_path / "volumes").glob("*.img"))


def test_fsync_and_writeback_are_held_to_the_volume_bandwidth(
    in_memory: Path, require: Callable[..., None]
) -> None:
    """Buffered writes reach the device through fsync (in the writer) or through the kernel's
    flusher (anyone's sync): both must pay the volume's bandwidth, as on a real disk."""
    slow = VolumeClass(size=parse_size("128M"), write_bw=parse_size("8M"))
    profile = Profile.build("db", volumes={"log": "slow"}, volume_classes={"slow": slow})
    require(profile)
    with CellHardware(in_memory, {"db": profile}) as hw:
        log = hw.volume_paths["db/log"]
        dd = ["dd", "if=/dev/zero", "bs=1M", "count=24", "status=none"]
        start = time.monotonic()
        subprocess.run(
            [*hw.launch_prefix("db"), *dd, f"of={log}/fsynced", "conv=fsync"], check=True, timeout=60
        )
        fsynced = 24 / (time.monotonic() - start)
        subprocess.run([*hw.launch_prefix("db"), *dd, f"of={log}/buffered"], check=True, timeout=60)
        start = time.monotonic()
        subprocess.run(
            ["sync", "-f", str(log)], check=True, timeout=60
        )  # flushed by the kernel, not the role
        flushed = 24 / (time.monotonic() - start)
    print(f"8 MiB/s volume: fsync {fsynced:.1f} MiB/s, writeback {flushed:.1f} MiB/s")
    assert 6.8 <= fsynced <= 9.2, f"fsync wrote {fsynced:.1f} MiB/s to an 8 MiB/s volume"
    assert 6.8 <= flushed <= 9.2, f"writeback wrote {flushed:.1f} MiB/s to an 8 MiB/s volume"
