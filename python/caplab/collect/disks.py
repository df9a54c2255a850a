"""Block devices from ``/proc/diskstats``: IO rates, busy share, queue length and await.

Only whole devices are reported (a partition's IO is already in its disk's figures); loop, ram and
zram devices hold no data worth sizing. Stacked devices (dm-*, md*) are reported too, since a
database often lives on one, and ``cell_resources`` takes care not to add their IO to their disks'.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from caplab.collect.base import ResourceSample

__all__ = ["DiskCollector", "DiskCounters", "disk_for_path", "disk_rates", "parse_diskstats"]

DISKSTATS = Path("/proc/diskstats")
SYS_BLOCK = Path("/sys/block")
SECTOR = 512
"""/proc/diskstats counts 512-byte sectors whatever the device's own sector size."""
MB = 1_000_000
SKIPPED_PREFIXES = ("loop", "ram", "zram")


@dataclass(frozen=True)
class DiskCounters:
    """The cumulative counters of one device (fields 4–14 of /proc/diskstats; times in ms)."""

    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    io_ms: int
    """Time with at least one IO in flight: what busy % is made of."""
    weighted_ms: int
    """Sum over IOs of their time in flight: its rate is the average queue length."""


def parse_diskstats(text: str) -> dict[str, DiskCounters]:
    """Every device line of /proc/diskstats, by device name."""
    out: dict[str, DiskCounters] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14:
            continue
        n = [int(x) for x in f[3:14]]
        out[f[2]] = DiskCounters(
            reads=n[0],
            read_sectors=n[2],
            read_ms=n[3],
            writes=n[4],
            write_sectors=n[6],
            write_ms=n[7],
            io_ms=n[9],
            weighted_ms=n[10],
        )
    return out


def disk_rates(prev: DiskCounters, now: DiskCounters, wall_s: float) -> dict[str, float]:
    """The figures of one device over ``wall_s`` seconds. ``await_ms`` is left out when no IO
    completed: an interval without IO has no wait to report, and a zero would drag means down."""
    wall_s = max(wall_s, 1e-9)
    reads = max(0, now.reads - prev.reads)
    writes = max(0, now.writes - prev.writes)
    out = {
        "read_iops": reads / wall_s,
        "write_iops": writes / wall_s,
        "read_mb_s": max(0, now.read_sectors - prev.read_sectors) * SECTOR / MB / wall_s,
        "write_mb_s": max(0, now.write_sectors - prev.write_sectors) * SECTOR / MB / wall_s,
        # io_ms can run a tick ahead of the wall clock; a device is never more than fully busy.
        "busy_percent": min(100.0, max(0, now.io_ms - prev.io_ms) / (wall_s * 1000) * 100),
        "avg_queue": max(0, now.weighted_ms - prev.weighted_ms) / (wall_s * 1000),
    }
    if reads + writes:
        waited = max(0, now.read_ms - prev.read_ms) + max(0, now.write_ms - prev.write_ms)
        out["await_ms"] = waited / (reads + writes)
    return out


def whole_disks() -> set[str] | None:
    """Names of whole block devices (``/sys/block``), or None where sysfs is not available."""
    try:
        return {name for name in os.listdir(SYS_BLOCK) if not name.startswith(SKIPPED_PREFIXES)}
    except OSError:
        return None


def disk_for_path(path: str | os.PathLike[str]) -> str | None:
    """The whole device holding ``path`` (``sda`` for a file on ``sda2``), or None when the
    filesystem has no block device of its own (tmpfs, overlay, network filesystems)."""
    st = os.stat(path)
    dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    try:
        real = dev.resolve(strict=True)
    except OSError:
        return None
    if (real / "partition").exists():
        real = real.parent
    return real.name


class DiskCollector:
    """Scope ``disk:NAME`` for each whole device: read_iops, write_iops, read_mb_s, write_mb_s,
    busy_percent, avg_queue, await_ms (only when IO completed)."""

    name = "disks"

    def __init__(self) -> None:
        self._prev: dict[str, DiskCounters] = {}
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""
        self._disks: set[str] | None = None

    def start(self) -> None:
        self._disks = whole_disks()
        self.sampled_at = time.monotonic()
        self._prev = self._read()

    def sample(self, t: float) -> list[ResourceSample]:
        now_t = time.monotonic()
        now = self._read()
        wall = now_t - self.sampled_at
        out: list[ResourceSample] = []
        for name, counters in now.items():
            prev = self._prev.get(name)
            if prev is None:
                continue  # appeared mid-trial: from the next sample on
            for metric, value in disk_rates(prev, counters, wall).items():
                out.append(ResourceSample(t, f"disk:{name}", metric, value))
        self._prev, self.sampled_at = now, now_t
        return out

    def stop(self) -> None:
        self._prev = {}

    def _read(self) -> dict[str, DiskCounters]:
        stats = parse_diskstats(DISKSTATS.read_text())
        if self._disks is None:
            return {n: c for n, c in stats.items() if not n.startswith(SKIPPED_PREFIXES)}
        return {n: c for n, c in stats.items() if n in self._disks}
