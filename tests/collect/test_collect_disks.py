"""The disk collector: the formulas on known counters, then a known write on the real device.

The device may be shared, so the live check bounds from below (the device wrote at least what we
fsynced) and checks that the figures are possible, not that they equal ours.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caplab.collect import DiskCollector, ResourceSample
from caplab.collect.disks import DISKSTATS, DiskCounters, disk_for_path, disk_rates, parse_diskstats

# Two readings of one device a second apart (fields as the kernel prints them).
BEFORE = " 254       0 vda 1000 10 80000 500 2000 20 160000 4000 0 3000 4500 0 0 0 0 0 0"
AFTER = " 254       0 vda 1100 10 88000 550 2300 20 184000 4450 2 3600 5300 0 0 0 0 0 0"
PARTITION = " 254       1 vda1 5 0 40 1 0 0 0 0 0 1 1"


def test_parse_diskstats_reads_the_documented_fields() -> None:
    stats = parse_diskstats("\n".join([BEFORE, PARTITION, "garbage line"]))
    assert set(stats) == {"vda", "vda1"}
    assert stats["vda"] == DiskCounters(
        reads=1000,
        read_sectors=80000,
        read_ms=500,
        writes=2000,
        write_sectors=160000,
        write_ms=4000,
        io_ms=3000,
        weighted_ms=4500,
    )


def test_rates_follow_iostat_definitions() -> None:
    before, after = parse_diskstats(BEFORE)["vda"], parse_diskstats(AFTER)["vda"]
    r = disk_rates(before, after, 2.0)
    assert r["read_iops"] == 50  # 100 reads in 2 s
    assert r["write_iops"] == 150
    assert r["read_mb_s"] == pytest.approx(8000 * 512 / 1e6 / 2)
    assert r["write_mb_s"] == pytest.approx(24000 * 512 / 1e6 / 2)
    assert r["busy_percent"] == pytest.approx(30.0)  # 600 ms of IO time in 2000 ms
    assert r["avg_queue"] == pytest.approx(0.4)  # 800 ms of weighted time per 2000 ms
    assert r["await_ms"] == pytest.approx((50 + 450) / 400)


def test_an_idle_interval_has_no_await_and_busy_never_exceeds_100() -> None:
    before = parse_diskstats(BEFORE)["vda"]
    assert "await_ms" not in disk_rates(before, before, 1.0)
    # io_ms may run a tick ahead of the wall clock.
    ahead = DiskCounters(**{**before.__dict__, "io_ms": before.io_ms + 1010})
    assert disk_rates(before, ahead, 1.0)["busy_percent"] == 100.0


def test_partitions_loop_and_ram_devices_are_left_out() -> None:
    disks = DiskCollector()
    disks.start()
    samples = disks.sample(0.2)
    names = {s.scope.removeprefix("disk:") for s in samples}
    assert not any(n.startswith(("loop", "ram", "zram")) for n in names)
    for name in names:
        assert not Path(f"/sys/class/block/{name}/partition").exists(), name


def test_a_fsynced_write_shows_on_the_device_holding_the_file(tmp_path: Path) -> None:
    device = disk_for_path(tmp_path)
    if device is None or device not in parse_diskstats(DISKSTATS.read_text()):
        pytest.skip(f"{tmp_path} is on a filesystem with no block device of its own (tmpfs, overlay)")
    size = 32_000_000
    disks = DiskCollector()
    disks.start()
    began = disks.sampled_at
    with open(tmp_path / "data.bin", "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
    samples = disks.sample(1.0)
    window = disks.sampled_at - began  # the collector's own: its rates are per second of it
    scope = f"disk:{device}"

    def get(metric: str) -> float:
        (v,) = [s.value for s in samples if s.scope == scope and s.metric == metric]
        return v

    written = get("write_mb_s") * window * 1e6
    assert written >= size * 0.99, f"{device} wrote {written / 1e6:.1f} MB, expected ≥ {size / 1e6} MB"
    assert get("write_iops") * window >= 1
    assert 0 < get("busy_percent") <= 100
    assert get("await_ms") > 0
    assert get("avg_queue") > 0


def test_every_sample_is_labelled_with_the_interval_end() -> None:
    disks = DiskCollector()
    disks.start()
    samples: list[ResourceSample] = disks.sample(3.0)
    assert samples and all(s.t == 3.0 and s.scope.startswith("disk:") for s in samples)
