"""A device model as a real filesystem: the model's daemon serves a file through FUSE (backed by
a sparse file), a loop device with direct I/O sits on the served file, ext4 on the loop device,
mounted under the cell's working directory. Every read, write and flush the filesystem sends its
disk is held for the time the model gives (seek, rotation, cache, RAID, flash), so a database on
it meets the device's physics, not the host's.

Several volumes may share one device: each is a directory of its filesystem (``mounts``), so
"data, log and temp on one mirrored pair" is one device and three paths.

``remove`` takes everything down in the reverse order — unmount, detach the loop device, stop
the daemon, unmount FUSE, delete the backing file — also when the daemon died, and then says
why it died.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from pathlib import Path

from caplab.profiles.device_models import DeviceModel
from caplab.profiles.errors import ProfileError, run_tool
from caplab.profiles.resource import Usage
from caplab.profiles.volumes import counted_since, read_block_stat

READY_S = 15.0
"""How long the daemon may take to mount (an interpreter start, mostly)."""
STOP_S = 5.0
READY = "ready"
"""The daemon's ready line (``caplab.profiles.device.READY``; not imported: the module imports
the compiled engine, which this one needs only in the daemon's process)."""


class ModelDevice:
    """Device ``name`` of model ``model``, its files under ``workdir``, its filesystem mounted at
    ``workdir/name`` with one directory per entry of ``mounts``."""

    kind = "device"

    def __init__(
        self, name: str, model: DeviceModel, workdir: Path, mounts: tuple[str, ...] = ("data",)
    ) -> None:
        self.name = name
        self.model = model
        self.workdir = workdir
        self.mounts = mounts
        self.backing = workdir / f"{name}.backing"
        self.fuse_dir = workdir / f"{name}.fuse"
        self.mount_path = workdir / name
        self.loop: str | None = None
        self.served: dict[str, int | float | str] = {}
        """What the daemon served, from its last line: counts, lateness, ``cpu_s``."""
        self._daemon: subprocess.Popen[str] | None = None
        self._fuse_mounted = False
        self._mounted = False
        self._stopping = False
        self._baseline: dict[str, int] = {}

    @property
    def served_file(self) -> Path:
        return self.fuse_dir / "device"

    @property
    def paths(self) -> dict[str, Path]:
        """Each mount's directory."""
        return {m: self.mount_path / m for m in self.mounts}

    def create(self) -> None:
        try:
            self._create()
        except BaseException:
            with contextlib.suppress(ProfileError):
                self.remove()
            raise

    def _create(self) -> None:
        what = f"device {self.name}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.backing, "xb") as backing:  # sparse: only what is written takes space
            backing.truncate(self.model.size)
        self.fuse_dir.mkdir(exist_ok=True)
        self._start_daemon()
        out = run_tool(
            ["losetup", "--find", "--show", "--direct-io=on", str(self.served_file)], f"{what}: loop device"
        )
        self.loop = out.strip()
        self._baseline = read_block_stat(self.loop)  # a loop device keeps its counters from earlier users
        dio = Path("/sys/block") / Path(self.loop).name / "loop" / "dio"
        if dio.exists() and dio.read_text().strip() != "1":
            raise ProfileError(
                f"{what}: {self.loop} has no direct I/O: the host's page cache would hide the model"
            )
        run_tool(
            ["mkfs.ext4", "-q", "-F", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", self.loop],
            f"{what}: making the ext4 filesystem",
            timeout=300,
        )
        self.mount_path.mkdir(exist_ok=True)
        run_tool(["mount", "-t", "ext4", self.loop, str(self.mount_path)], f"{what}: mounting")
        self._mounted = True
        for path in self.paths.values():
            path.mkdir(exist_ok=True)

    def _start_daemon(self) -> None:
        argv = [sys.executable, "-m", "caplab.profiles.device", "--mountpoint", str(self.fuse_dir)]
        argv += ["--backing", str(self.backing), "--model", json.dumps(self.model.engine())]
        env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._daemon = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env
        )
        assert self._daemon.stdout is not None
        ready, _, _ = select.select([self._daemon.stdout], [], [], READY_S)
        line = self._daemon.stdout.readline().strip() if ready else ""
        self._fuse_mounted = True  # or half-way: remove() checks
        if line != READY:
            raise ProfileError(f"device {self.name}: the model's daemon did not start: {self._why_dead()}")

    def procs_files(self) -> list[Path]:
        return []  # the model holds every request that reaches the device, whoever sent it

    def enter_argv(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        pass

    @property
    def pid(self) -> int | None:
        return self._daemon.pid if self._daemon else None

    def failure(self) -> str | None:
        """Why the daemon is gone, if it died (None while it runs or after a clean stop)."""
        if self._daemon is None or self._stopping or self._daemon.poll() is None:
            return None
        return self._why_dead()

    def _why_dead(self) -> str:
        assert self._daemon is not None
        if self._daemon.poll() is None:
            return f"no ready line within {READY_S:g}s"
        code = self._daemon.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        assert self._daemon.stderr is not None
        err = self._daemon.stderr.read().strip().splitlines()
        return f"{how}" + (f": {err[-1]}" if err else "")

    def usage(self) -> Usage:
        """The loop device's counters since the device was made (``/sys/block/loopN/stat``, as a
        volume's), and the daemon's CPU seconds so far (caplab's own cost). The model holds each
        request below the loop device, so the loop device's busy time and queue are the device's."""
        out: Usage = {"device": self.name, "model": self.model.describe(), "mount_path": str(self.mount_path)}
        if self.loop:
            out["loop"] = Path(self.loop).name
            with contextlib.suppress(OSError):
                out |= counted_since(self._baseline, read_block_stat(self.loop))
        if self._daemon and self._daemon.poll() is None:
            try:
                fields = Path(f"/proc/{self._daemon.pid}/stat").read_text().rsplit(")", 1)[1].split()
                out["daemon_cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return out

    def remove(self) -> None:
        died = self.failure()
        what = f"device {self.name}"
        errors = self._take_down(what)
        for path in self.paths.values():
            _remove(path.rmdir, errors)  # only if empty: never delete a mount's contents
        for remove in (self.mount_path.rmdir, self.fuse_dir.rmdir, self.backing.unlink):
            _remove(remove, errors)
        if died:
            errors.insert(0, f"{what}: the model's daemon died ({died})")
        if errors:
            raise ProfileError("; ".join(errors))

    def _take_down(self, what: str) -> list[str]:
        """Unmounts ext4, detaches the loop device, stops the daemon, unmounts FUSE; what could
        not be done, as messages."""
        errors: list[str] = []
        if self._mounted:
            errors += _unmount(["umount"], self.mount_path, what)
            self._mounted = False
        if self.loop:
            try:
                run_tool(["losetup", "-d", self.loop], f"{what}: detaching {self.loop}")
            except ProfileError as exc:
                errors.append(str(exc))
            self.loop = None
        self._stop_daemon()
        if self._fuse_mounted and _is_mount(self.fuse_dir):
            errors += _unmount(["fusermount3", "-u"], self.fuse_dir, f"{what}: FUSE")
        self._fuse_mounted = False
        return errors

    def _stop_daemon(self) -> None:
        if self._daemon is None:
            return
        self._stopping = True
        if self._daemon.poll() is None:
            self._daemon.terminate()
            try:
                self._daemon.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                self._daemon.kill()
                self._daemon.wait()
        assert self._daemon.stdout is not None
        for line in self._daemon.stdout.read().splitlines():
            if line.startswith("{"):
                self.served = json.loads(line)
        self._daemon.stdout.close()
        if self._daemon.stderr:
            self._daemon.stderr.close()
        self._daemon = None


def _is_mount(path: Path) -> bool:
    """From the mount table (a stat of a dead FUSE endpoint fails: "transport endpoint is not
    connected")."""
    target = str(path.absolute())
    with open("/proc/self/mountinfo") as table:
        return any(line.split()[4] == target for line in table)


def _unmount(tool: list[str], path: Path, what: str) -> list[str]:
    """Unmounts ``path``; a busy mount lazily (the kernel finishes when its last user goes)."""
    lazy = "-z" if tool[0] == "fusermount3" else "-l"
    try:
        run_tool([*tool, str(path)], f"{what}: unmounting")
    except ProfileError:
        try:
            run_tool([*tool, lazy, str(path)], f"{what}: unmounting")
        except ProfileError as exc:
            return [str(exc)]
    return []


def _remove(remove: object, errors: list[str]) -> None:
    assert callable(remove)
    try:
        remove()
    except FileNotFoundError:
        pass
    except OSError as exc:
        errors.append(str(exc))
