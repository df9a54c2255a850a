"""Volumes: a real filesystem per volume — a sparse ext4 image on a loop device, mounted under the
cell's working directory — with its class's IOPS and bandwidth ceilings applied to that device.

Where the ceiling lives differs by cgroup version, for the same reason: the kernel's writeback.
- v1 charges background writeback to the root blkio group and does not apply a parent's limits to
  its children, so a role-level rule would miss the flusher's writes. The rules go on the blkio
  root for this device only (the loop device belongs to this volume alone), and the role's
  processes join the blkio root: every I/O that reaches the device — direct, fsync, writeback — is
  held to the class's figures.
- v2 attributes writeback to the cgroup that dirtied the pages, and the root has no ``io.max``:
  the rule goes on the role's group.
The loop device runs with direct I/O to its backing file, so the host's page cache does not
absorb what the volume's throttle lets through.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from caplab.profiles.cgroup import Cgroup
from caplab.profiles.errors import ProfileError, run_tool
from caplab.profiles.models import VolumeClass, format_size
from caplab.profiles.resource import Usage, write_pid

_V1_RULES = {
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
    "read_bw": "blkio.throttle.read_bps_device",
    "write_bw": "blkio.throttle.write_bps_device",
}
_V2_KEYS = {"read_iops": "riops", "write_iops": "wiops", "read_bw": "rbps", "write_bw": "wbps"}
_STAT_FIELDS = ("reads", "reads_merged", "read_sectors", "read_ms", "writes", "writes_merged",
                "write_sectors", "write_ms", "in_flight", "io_ms", "queue_ms", "discards",
                "discards_merged", "discard_sectors", "discard_ms", "flushes", "flush_ms")  # fmt: skip
"""The fields of ``/sys/block/DEV/stat`` (the last six on kernels from 4.18 and 5.5 on): a
throttle counts every request, an fsync's cache flush too, which the write count leaves out."""


def clear_v1_rules(blkio_root: Path, maj_min: str) -> None:
    """Lift every v1 throttle rule for one device (a loop device outlives its volume)."""
    for filename in _V1_RULES.values():
        path = blkio_root / filename
        try:
            if any(line.split()[0] == maj_min for line in path.read_text().splitlines() if line.strip()):
                path.write_text(f"{maj_min} 0")
        except OSError:
            pass


def read_block_stat(device: str) -> dict[str, int]:
    """The counters of ``/sys/block/DEV/stat`` for ``/dev/loopN`` (or ``loopN``), by field name."""
    values = (Path("/sys/block") / Path(device).name / "stat").read_text().split()
    return {name: int(v) for name, v in zip(_STAT_FIELDS, values, strict=False)}


def counted_since(baseline: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    """Counters since ``baseline`` (a loop device keeps its counters from earlier users); the
    requests in flight are a level, not a count, and are kept as they are."""
    cumulative = {k: v - baseline.get(k, 0) for k, v in now.items() if k != "in_flight"}
    return cumulative | {"in_flight": now.get("in_flight", 0)}


def device_of(loop_device: str) -> str:
    """``MAJ:MIN`` of ``/dev/loopN``."""
    return (Path("/sys/block") / Path(loop_device).name / "dev").read_text().strip()


class LoopVolume:
    """Volume ``name`` of class ``vclass``: image ``image``, mounted at ``mount_path``."""

    kind = "volume"

    def __init__(self, group: Cgroup, name: str, vclass: VolumeClass, image: Path, mount_path: Path) -> None:
        self.group = group
        self.name = name
        self.vclass = vclass
        self.image = image
        self.mount_path = mount_path
        self.device: str | None = None
        self.maj_min: str | None = None
        self._mounted = False
        self._baseline: dict[str, int] = {}

    def create(self) -> None:
        self.image.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.image.parent).free
        if self.vclass.size > free:
            raise ProfileError(
                f"volume {self.name}: {format_size(self.vclass.size)} is more than the"
                f" {format_size(free)} free under {self.image.parent}"
            )
        with open(self.image, "xb") as image:  # sparse: only what the filesystem writes takes space
            image.truncate(self.vclass.size)
        run_tool(
            ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(self.image)],
            f"volume {self.name}: making the ext4 filesystem",
            timeout=120,
        )
        self.device = self._attach_loop()
        self.maj_min = device_of(self.device)
        self._baseline = self._read_stat()  # a loop device keeps its counters from earlier users
        self.mount_path.mkdir(parents=True, exist_ok=True)
        run_tool(["mount", "-t", "ext4", self.device, str(self.mount_path)], f"volume {self.name}: mounting")
        self._mounted = True
        self._throttle()

    def _attach_loop(self) -> str:
        what = f"volume {self.name}: attaching a loop device"
        try:
            out = run_tool(["losetup", "--find", "--show", "--direct-io=on", str(self.image)], what)
        except ProfileError:  # a backing filesystem without O_DIRECT: buffered loop instead
            out = run_tool(["losetup", "--find", "--show", str(self.image)], what)
        return out.strip()

    def _throttle(self) -> None:
        assert self.maj_min is not None
        limits = {k: getattr(self.vclass, k) for k in _V1_RULES if getattr(self.vclass, k) is not None}
        if not limits:
            return
        if self.group.layout.version == 1:
            root = self.group.layout.root_of("io")
            for key, value in limits.items():
                path = root / _V1_RULES[key]
                try:
                    path.write_text(f"{self.maj_min} {value}")
                except OSError as exc:
                    raise ProfileError(f"volume {self.name}: cannot write {path}: {exc.strerror}") from exc
        else:
            rule = " ".join(f"{_V2_KEYS[k]}={v}" for k, v in limits.items())
            self.group.write("io", "io.max", f"{self.maj_min} {rule}")

    def procs_files(self) -> list[Path]:
        if not self.vclass.throttled:
            return []
        if self.group.layout.version == 1:
            return [self.group.layout.root_of("io") / "cgroup.procs"]
        return self.group.procs_files({"io"})

    def enter_argv(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        write_pid(self.procs_files(), pid)

    def usage(self) -> Usage:
        """The device (``loop3``) a disk collector reads, where it is mounted, and its counters
        from ``/sys/block/DEV/stat`` since the volume was made (sectors are 512 bytes)."""
        out: Usage = {"volume": self.name, "mount_path": str(self.mount_path)}
        if self.device is None:
            return out
        out |= {"device": Path(self.device).name, "maj_min": self.maj_min or ""}
        return out | counted_since(self._baseline, self._read_stat())

    def _read_stat(self) -> dict[str, int]:
        return read_block_stat(self.device) if self.device is not None else {}

    def remove(self) -> None:
        errors: list[str] = []
        if self.maj_min and self.group.layout.version == 1:
            clear_v1_rules(self.group.layout.root_of("io"), self.maj_min)
        if self._mounted:
            errors += self._unmount()
            self._mounted = False
        if self.device:
            try:
                run_tool(["losetup", "-d", self.device], f"volume {self.name}: detaching {self.device}")
            except ProfileError as exc:
                errors.append(str(exc))
            self.device = None
        for remove in (self.image.unlink, self.mount_path.rmdir):
            try:
                remove()
            except FileNotFoundError:
                pass
            except OSError as exc:
                errors.append(f"volume {self.name}: {exc}")
        if errors:
            raise ProfileError("; ".join(errors))

    def _unmount(self) -> list[str]:
        """Unmounts the volume; a busy one is detached lazily (the kernel finishes when its last
        user goes). What could not be done, as messages."""
        try:
            run_tool(["umount", str(self.mount_path)], f"volume {self.name}: unmounting")
        except ProfileError:
            try:
                run_tool(["umount", "-l", str(self.mount_path)], f"volume {self.name}: unmounting")
            except ProfileError as exc:
                return [str(exc)]
        return []
