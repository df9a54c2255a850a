"""Device models against the real kernel, fio as the outside check: ext4 on a loop device (direct
I/O) over a file the model's daemon serves through FUSE. Each expected figure is derived beside
its test; the tolerances come from the sample (a 3 s fio run at ~80 IOPS is ~240 random
positionings, a standard error of ~2 %), never from how fast this machine is. What the host
path itself takes per request (fio, the loop device's worker, FUSE: 0.1 ms idle, more on a busy
machine) is measured on a model that takes no time, and added where a figure depends on it.

The model's own figure (``simulate_device``, the same model without a clock) is the reference
where the derivation needs a simulation (reordering, RAID)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caplab._engine import simulate_device
from caplab.profiles import CellHardware, Profile, VolumeClass, sweep_leftovers
from caplab.profiles.device_models import Cache, DeviceModel, Hdd, Raid, Throttle
from caplab.profiles.devices import ModelDevice
from support.require import PROFILES, require

pytestmark = pytest.mark.slow  # fio through the kernel, a few seconds each

GIB = 1 << 30
HDD = Hdd(size=GIB)  # 7,200 rpm, 8.5 ms average seek, 150 MB/s, cache off


def _missing() -> list[str]:
    missing = []
    if os.geteuid() != 0:
        missing.append("not root (losetup, mount)")
    if not Path("/dev/fuse").exists():
        missing.append("no /dev/fuse")
    for tool in ("fusermount3", "fio", "losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} is not installed (apt-get install -y fuse3 fio util-linux e2fsprogs)")
    if not Path("/dev/shm").is_dir():
        missing.append("no /dev/shm for the backing files")
    return missing


@pytest.fixture
def workdir() -> Iterator[Path]:
    """The backing files in memory: what fio measures is the model, not a host disk."""
    require(PROFILES, _missing())
    # caplab-PID-: the leftover check on the other worker knows the devices as this live process's.
    directory = Path(tempfile.mkdtemp(prefix=f"caplab-{os.getpid()}-devices-", dir="/dev/shm"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def device(workdir: Path, name: str, model: DeviceModel) -> ModelDevice:
    d = ModelDevice(name, model, workdir, mounts=("data",))
    d.create()
    return d


def fio(target: str | Path, rw: str, bs: str, depth: int, seconds: int = 3, **extra: str) -> float:
    """IOPS of one fio job with direct I/O on ``target`` (a device or a file)."""
    argv = [
        "fio", "--name=known-answer", f"--filename={target}", f"--rw={rw}", f"--bs={bs}", "--direct=1",
        "--ioengine=libaio", f"--iodepth={depth}", f"--runtime={seconds}", "--time_based",
        "--output-format=json", *(f"--{k}={v}" for k, v in extra.items()),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=True)
    job = json.loads(done.stdout)["jobs"][0]
    return float(job["read"]["iops"] + job["write"]["iops"])


def laid_out(path: Path, size: int) -> Path:
    """``path`` written out to ``size`` bytes and synced: its blocks allocated, so an overwrite
    touches no metadata (fio's own layout leaves delayed allocation that its first direct writes
    would trigger, one journal commit each)."""
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(bytes(1 << 20))
        f.flush()
        os.fsync(f.fileno())
    return path


def model_iops(model: DeviceModel, op: str, depth: int, span: int, pattern: str = "random") -> float:
    workload = {"op": op, "pattern": pattern, "block": 4096, "depth": depth, "span": span, "gap_ns": 50_000}
    return simulate_device(json.dumps(model.engine()), json.dumps(workload), 30.0)


def host_path_s(workdir: Path) -> float:
    """Seconds per request that fio, the loop device and FUSE take, on a device that takes none
    (a throttle with no limits), 4 KiB random reads at depth 1."""
    null = device(workdir, "null", Throttle(size=GIB))
    try:
        assert null.loop
        return 1.0 / fio(null.loop, "randread", "4k", 1, seconds=2)
    finally:
        null.remove()


def test_an_hdd_seeks_rotates_streams_and_reorders(workdir: Path) -> None:
    host_s = host_path_s(workdir)
    disk = device(workdir, "hdd", HDD)
    try:
        assert disk.loop
        # Random 4 KiB reads over the whole device, one at a time: each an average seek (8.5 ms,
        # the mean over random seeks by construction) and half a turn (60 s / 7,200 / 2 =
        # 4.17 ms), then 4 KiB at 150 MB/s (0.03 ms): 12.70 ms, 78.8 IOPS on the device; the
        # host path's own time per request comes on top.
        qd1 = fio(disk.loop, "randread", "4k", 1)
        assert qd1 == pytest.approx(1 / (12.70e-3 + host_s), rel=0.08)
        assert qd1 == pytest.approx(78.8, rel=0.15)
        # The same at depth 32: the drive serves the nearest of 32 (SPTF); the model's own
        # figure for it, within 20 %, and well above depth 1.
        qd32 = fio(disk.loop, "randread", "4k", 32)
        assert qd32 == pytest.approx(model_iops(HDD, "read", 32, GIB), rel=0.20)
        assert qd32 > 1.8 * qd1
        # Sequential 1 MiB reads: no seek, no lost turn (read-ahead): the media rate, 150 MB/s.
        mib_s = fio(disk.loop, "read", "1M", 1) * (1 << 20)
        assert mib_s == pytest.approx(150e6, rel=0.08)
        # 4 KiB O_DSYNC appends (a log): each write plus a flush (nothing to flush, cache off);
        # the next arrives just after its sector passed under the head and waits almost a whole
        # turn: one per rotation, 7,200 / 60 = 120 per second. (The file is written out
        # first: a write into unallocated blocks would commit the journal each time.)
        log = laid_out(disk.paths["data"] / "log", 16 << 20)
        dsync = fio(log, "write", "4k", 1, sync="dsync")
        assert dsync == pytest.approx(120.0, rel=0.10)
    finally:
        disk.remove()
    # Each O_DSYNC write reached the model as a write and a flush; the daemon says its own CPU.
    assert float(disk.served["flushes"]) > 0
    assert float(disk.served["cpu_s"]) > 0


def test_a_battery_backed_cache_makes_a_log_s_fsync_cheap(workdir: Path) -> None:
    # A write lands in the cache (20 µs + 4 KiB at 600 MB/s) and the flush returns at once
    # (20 µs): the model alone would allow ~20,000 appends a second; FUSE and the loop device
    # add their own ~0.1 ms each way, so "thousands", against 120 with the cache off.
    disk = device(workdir, "bbu", Hdd(size=GIB, cache=Cache("battery-backed")))
    try:
        dsync = fio(laid_out(disk.paths["data"] / "log", 16 << 20), "write", "4k", 1, seconds=2, sync="dsync")
        assert dsync > 1000
    finally:
        disk.remove()


def test_raid0_doubles_random_reads_and_raid1_reads_twice_writes_once(workdir: Path) -> None:
    # Two disks each serve about half of the 8 outstanding reads: twice one disk at depth 4
    # (reordering gains with depth, so one disk at depth 8 is not the reference).
    single = device(workdir, "single", HDD)
    try:
        assert single.loop
        one_d4 = fio(single.loop, "randread", "4k", 4)
        one_writes = fio(laid_out(single.paths["data"] / "f", 128 << 20), "randwrite", "4k", 8)
    finally:
        single.remove()
    stripe = device(workdir, "stripe", Raid("raid0", 2 * GIB, HDD, disks=2))
    try:
        assert stripe.loop
        assert fio(stripe.loop, "randread", "4k", 8) / one_d4 == pytest.approx(2.0, rel=0.2)
    finally:
        stripe.remove()
    mirror = device(workdir, "mirror", Raid("raid1", GIB, HDD, disks=2))
    try:
        assert mirror.loop
        # Reads go to the less busy disk: two disks at about depth 4 each, as RAID 0.
        assert fio(mirror.loop, "randread", "4k", 8) / one_d4 == pytest.approx(2.0, rel=0.2)
        # Writes go to both: one disk's rate (the same file on the same span).
        writes = fio(laid_out(mirror.paths["data"] / "f", 128 << 20), "randwrite", "4k", 8)
        assert writes / one_writes == pytest.approx(1.0, rel=0.2)
    finally:
        mirror.remove()


def _traces(d: ModelDevice) -> list[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    with open("/proc/self/mountinfo") as table:
        mounts = table.read()
    return [
        str(p)
        for p in (d.backing, d.fuse_dir, d.mount_path)
        if p.exists() or str(p) in mounts or str(p) in out
    ]


def test_everything_is_gone_after_remove_and_after_the_daemon_is_killed(workdir: Path) -> None:
    disk = device(workdir, "gone", HDD)
    disk.remove()
    assert _traces(disk) == []
    killed = device(workdir, "killed", HDD)
    assert killed.pid is not None
    os.kill(killed.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while killed.failure() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(Exception, match=r"daemon died \(killed by signal 9\)"):
        killed.remove()
    assert _traces(killed) == []


def test_a_profile_puts_data_and_log_on_one_device_and_the_cell_removes_it(workdir: Path) -> None:
    profile = Profile.build(
        "internal",
        volumes={"data": "pair", "log": "pair", "scratch": "plain"},
        volume_classes={"plain": VolumeClass(size=64 << 20)},
        device_models={"pair": Raid("raid1", GIB, HDD, cache=Cache("battery-backed"))},
    )
    assert "data (on pair): raid1 of 2" in "\n".join(profile.describe())
    with CellHardware(workdir, {"db": profile}) as hw:
        paths = hw.volume_paths
        # One mirrored pair holds data and log: two directories of one filesystem.
        assert paths["db/data"].stat().st_dev == paths["db/log"].stat().st_dev
        assert paths["db/scratch"].stat().st_dev != paths["db/data"].stat().st_dev
        (paths["db/log"] / "wal").write_bytes(b"x" * 4096)
        # The daemon's CPU is read beside the role's figures, as caplab's own cost.
        assert "daemon_cpu_s" in hw.usage("db")["device:pair"]
        served = next(iter(hw.roles["db"].devices.values()))
    assert _traces(served) == []


def test_a_devices_io_is_measured_as_the_volume_of_the_mounts_it_holds(workdir: Path) -> None:
    """The collectors read a device as a volume named by what it holds (``data+log``), from its
    loop device's counters: fio's 100 synchronous writes are there, each with its flush, and the
    time they were held by the model is the device's busy time (100 × ~4–8 ms of an HDD's
    rotation, not the microseconds the host path takes)."""
    from caplab.collect import ProfileCollector
    from caplab.study.hardware import profile_source

    profile = Profile.build(
        "internal", volumes={"data": "disk", "log": "disk"}, device_models={"disk": Hdd(size=GIB)}
    )
    with CellHardware(workdir, {"db": profile}) as hw:
        collector = ProfileCollector("db", profile_source(hw, "db"))
        collector.start()
        started = time.monotonic()
        target = hw.volume_paths["db/log"] / "wal"
        subprocess.run(
            ["fio", "--name=log", f"--filename={target}", "--rw=write", "--bs=4k", "--size=400k", "--sync=1"],
            capture_output=True, check=True, timeout=60,
        )  # fmt: skip
        wall = time.monotonic() - started
        got = {(s.scope, s.metric): s.value for s in collector.sample(wall)}
    assert {scope for scope, _ in got} == {"volume:data+log"}
    writes = got[("volume:data+log", "write_iops")] * wall
    flushes = got[("volume:data+log", "flush_iops")] * wall
    assert writes >= 100 and flushes >= 100  # ext4's own journal writes come on top
    busy_s = got[("volume:data+log", "busy_percent")] / 100 * wall
    assert busy_s >= 100 * 0.004  # at least half a turn each (8.3 ms a turn at 7,200 rpm)


CRASHING_RUN = """
import os, sys, time
from pathlib import Path
from caplab.profiles.device_models import Hdd
from caplab.profiles.devices import ModelDevice
workdir = Path(sys.argv[1]) / "devices" / f"caplab-{os.getpid()}-0-db"
device = ModelDevice("disk", Hdd(size=1 << 30), workdir)
device.create()
print(device.pid, flush=True)
time.sleep(60)
"""


def test_a_run_killed_outright_leaves_a_daemon_that_stops_and_a_sweep_removes_the_rest(workdir: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", CRASHING_RUN, str(workdir)], stdout=subprocess.PIPE, text=True
    )
    assert run.stdout is not None
    daemon = int(run.stdout.readline())
    run.kill()  # caplab killed outright: nothing of its own cleanup runs
    run.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{daemon}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{daemon}").exists(), "the orphaned daemon stopped itself"
    swept = sweep_leftovers()
    assert any("unmounted the device model" in line for line in swept), swept
    with open("/proc/self/mountinfo") as table:
        assert str(workdir) not in table.read()
    assert str(workdir) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert not list(workdir.rglob("*.backing"))
