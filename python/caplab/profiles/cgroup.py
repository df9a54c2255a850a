"""cgroup v1 or v2, detected once, behind one small type: a named group across the controllers a
role needs, that can be created, joined, read, and removed.

v1 mounts one hierarchy per controller (or a few together: ``cpu,cpuacct``), so a role's group is
one directory per hierarchy; v2 has one tree, so it is one directory with the controllers enabled
in the root's ``cgroup.subtree_control``. Resource modules name controllers by their v2 names
(``cpu``, ``memory``, ``io``, ``cpuset``) plus ``cpuacct`` (v1 only, for CPU time).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from caplab.profiles.errors import ProfileError

CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1_NAMES = {"io": "blkio"}


@dataclass(frozen=True)
class CgroupLayout:
    """Where each controller lives: ``version`` 1 with one mount per hierarchy, or 2 with one root."""

    version: int
    v1_mounts: dict[str, Path] = field(default_factory=dict)
    v2_root: Path | None = None
    v2_controllers: frozenset[str] = frozenset()

    def available(self, controller: str) -> bool:
        if self.version == 1:
            return _V1_NAMES.get(controller, controller) in self.v1_mounts
        if controller == "cpuacct":
            return "cpu" in self.v2_controllers  # v2's cpu.stat carries usage even without it
        return controller in self.v2_controllers

    def root_of(self, controller: str) -> Path:
        """The hierarchy root that holds ``controller`` (v2: the one root)."""
        if self.version == 2:
            assert self.v2_root is not None
            return self.v2_root
        name = _V1_NAMES.get(controller, controller)
        if name not in self.v1_mounts:
            raise ProfileError(f"cgroup v1 controller {name} is not mounted")
        return self.v1_mounts[name]

    def roots(self) -> list[Path]:
        """Every hierarchy root a caplab group may live under (for the leftover sweep)."""
        if self.version == 2:
            return [self.v2_root] if self.v2_root else []
        return sorted(set(self.v1_mounts.values()))


def parse_mountinfo(text: str) -> tuple[dict[str, Path], Path | None]:
    """v1 controller → mount point, and the cgroup2 mount (``/sys/fs/cgroup`` preferred)."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        mount_point, fstype = Path(fields[4]), rfields[0]
        if fstype == "cgroup":
            for option in rfields[2].split(","):
                if option in ("cpu", "cpuacct", "cpuset", "memory", "blkio", "pids", "freezer", "devices"):
                    v1.setdefault(option, mount_point)
        elif fstype == "cgroup2" and (v2 is None or mount_point == CGROUP_ROOT):
            v2 = mount_point
    return v1, v2


@functools.cache
def detect() -> CgroupLayout:
    """The cgroup layout of this machine. A hybrid system (v2 mounted beside v1 controllers, as
    here) counts as v1 for every controller v1 holds; pure v2 when no v1 controller is mounted."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return CgroupLayout(version=0)
    v1, v2 = parse_mountinfo(mountinfo)
    if v1:
        return CgroupLayout(version=1, v1_mounts=v1)
    if v2 is not None:
        try:
            controllers = frozenset((v2 / "cgroup.controllers").read_text().split())
        except OSError:
            controllers = frozenset()
        return CgroupLayout(version=2, v2_root=v2, v2_controllers=controllers)
    return CgroupLayout(version=0)


def read_keyed(path: Path) -> dict[str, int]:
    """``key value`` lines (memory.stat, cpu.stat, memory.events, memory.oom_control) as a dict."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def pids_in(directory: Path) -> list[int]:
    try:
        return [int(p) for p in (directory / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_directories(directories: list[Path], timeout: float = 5.0) -> None:
    """Remove a group's directories (one per v1 hierarchy). Processes in any of them are killed
    (the cell is over, and the kernel refuses to remove a populated group), again and again until
    every directory is gone: a process being launched may join one just after it was emptied."""
    remaining = [d for d in directories if d.exists()]
    deadline = time.monotonic() + timeout
    while remaining:
        pids = sorted({pid for d in remaining for pid in pids_in(d)})
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        failures: dict[Path, str] = {}
        for directory in list(remaining):
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:  # busy: a process is still exiting, or has just joined
                failures[directory] = exc.strerror or str(exc)
                continue
            remaining.remove(directory)
        if remaining and time.monotonic() > deadline:
            raise ProfileError(
                "; ".join(
                    f"cgroup {d}: cannot remove: {why} (processes {pids})" for d, why in failures.items()
                )
            )
        if remaining:
            time.sleep(0.02)


class Cgroup:
    """One role's group ``name`` across ``controllers``; created at the top of each hierarchy so
    that leftovers are found by name (``/sys/fs/cgroup/*/caplab-*``)."""

    def __init__(self, name: str, controllers: set[str], layout: CgroupLayout | None = None) -> None:
        self.name = name
        self.layout = layout or detect()
        self.controllers = frozenset(controllers)
        missing = [c for c in sorted(self.controllers) if not self.layout.available(c)]
        if missing:
            raise ProfileError(f"cgroup controller(s) {', '.join(missing)} not available on this machine")
        self._created: list[Path] = []

    def directory(self, controller: str) -> Path:
        return self.layout.root_of(controller) / self.name

    def directories(self) -> list[Path]:
        return sorted({self.directory(c) for c in self.controllers})

    def file(self, controller: str, filename: str) -> Path:
        return self.directory(controller) / filename

    def create(self) -> None:
        if self.layout.version == 2:
            self._enable_v2_controllers()
        for directory in self.directories():
            try:
                directory.mkdir(exist_ok=False)
            except OSError as exc:
                raise ProfileError(f"cgroup {directory}: cannot create: {exc.strerror}") from exc
            self._created.append(directory)
        if self.layout.version == 1 and "cpuset" in self.controllers:
            # v1 refuses tasks until cpus and mems are set; start from the parent's.
            root = self.layout.root_of("cpuset")
            for name in ("cpuset.cpus", "cpuset.mems"):
                self.write("cpuset", name, (root / name).read_text().strip())

    def _enable_v2_controllers(self) -> None:
        root = self.layout.root_of("cpu")
        wanted = [c for c in ("cpu", "memory", "io", "cpuset") if c in self.controllers]
        enabled = set((root / "cgroup.subtree_control").read_text().split())
        for controller in wanted:
            if controller not in enabled:
                try:
                    (root / "cgroup.subtree_control").write_text(f"+{controller}")
                except OSError as exc:
                    raise ProfileError(
                        f"cgroup v2: cannot enable the {controller} controller under {root}: {exc.strerror}"
                    ) from exc

    def write(self, controller: str, filename: str, value: str) -> None:
        path = self.file(controller, filename)
        try:
            path.write_text(value)
        except OSError as exc:
            raise ProfileError(f"cgroup {path}: cannot write {value!r}: {exc.strerror}") from exc

    def read(self, controller: str, filename: str) -> str:
        return self.file(controller, filename).read_text().strip()

    def procs_files(self, controllers: set[str] | frozenset[str] | None = None) -> list[Path]:
        chosen = self.controllers if controllers is None else frozenset(controllers) & self.controllers
        return sorted({self.directory(c) / "cgroup.procs" for c in chosen})

    def attach(self, pid: int, controllers: set[str] | frozenset[str] | None = None) -> None:
        for procs in self.procs_files(controllers):
            try:
                procs.write_text(str(pid))
            except OSError as exc:
                raise ProfileError(f"cgroup {procs.parent}: cannot move pid {pid}: {exc.strerror}") from exc

    def pids(self) -> list[int]:
        seen: set[int] = set()
        for directory in self.directories():
            seen.update(pids_in(directory))
        return sorted(seen)

    def remove(self) -> None:
        try:
            remove_directories(list(reversed(self._created)))
        finally:
            self._created = [d for d in self._created if d.exists()]
