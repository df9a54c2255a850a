"""A cell's hardware: every role's profile applied for the life of the cell, and removed after it
— also when the cell fails or the study is interrupted (Ctrl-C during removal is held until
removal is done)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType

from caplab.profiles import cpu
from caplab.profiles.cgroup import Cgroup, detect
from caplab.profiles.devices import ModelDevice
from caplab.profiles.errors import ProfileError
from caplab.profiles.links import NamespaceLink
from caplab.profiles.memory import MemoryCap
from caplab.profiles.models import Profile
from caplab.profiles.resource import RoleResource, Usage
from caplab.profiles.volumes import LoopVolume

PREFIX = "caplab-"
LOOPBACK = "127.0.0.1"
"""``{address.ROLE}`` of a role whose profile has no link: it runs in caplab's own namespace."""
_ROLE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def owner_prefix(pid: int | None = None) -> str:
    """Names carry the creating process's pid, so a sweep can tell a crashed run's leftovers from
    a live run's resources: ``caplab-<pid>-<token>-<role>``."""
    return f"{PREFIX}{os.getpid() if pid is None else pid}-{secrets.token_hex(3)}"


@dataclass
class RoleHardware:
    """What was created for one role, in creation order (removed in reverse)."""

    role: str
    profile: Profile
    group: Cgroup | None = None
    resources: list[RoleResource] = field(default_factory=list)
    link: NamespaceLink | None = None
    volumes: dict[str, LoopVolume] = field(default_factory=dict)
    devices: dict[str, ModelDevice] = field(default_factory=dict)


class CellHardware:
    """The roles' profiles for one cell. Use as a context manager::

    with CellHardware(workdir, {"db": db_profile}, scale=0.25) as hw:
        argv = hw.launch_prefix("db") + ["postgres", "-D", str(hw.volume_paths["db/data"])]
        url = f"http://{hw.addresses['db']}:5432/"
    """

    def __init__(
        self,
        workdir: Path,
        roles: Mapping[str, Profile],
        scale: float = 1.0,
        shared: Mapping[str, str] | None = None,
    ) -> None:
        for role in roles:
            if not _ROLE_NAME.fullmatch(role):
                raise ValueError(f"role name {role!r}: use letters, digits, '_', '.', '-'")
        if scale <= 0:
            raise ValueError(f"scale.cpu must be > 0, got {scale!r}")
        self.workdir = Path(workdir)
        self.profiles = dict(roles)
        self.scale = scale
        self.prefix = owner_prefix()
        self.shared = dict(shared or {})
        """Role → machine: roles on one machine share its cgroups, volumes and link (one combined
        server, as consolidation measures it), instead of each getting the profile to itself."""
        self.roles: dict[str, RoleHardware] = {}

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> CellHardware:
        self.create()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.remove()
        except ProfileError as cleanup:
            if exc is None:
                raise
            exc.add_note(str(cleanup))  # the cell's own error wins; its cleanup's goes with it

    def create(self) -> None:
        """Apply every role's profile; on any failure (or Ctrl-C) remove what was made and raise."""
        try:
            machines: dict[str, RoleHardware] = {}
            for role, profile in self.profiles.items():
                machine = self.shared.get(role)
                if machine is not None and machine in machines:
                    self.roles[role] = machines[machine]
                    continue
                hardware = RoleHardware(machine or role, profile)
                self.roles[role] = hardware
                if machine is not None:
                    machines[machine] = hardware
                self._create_role(hardware)
        except BaseException:
            with contextlib.suppress(ProfileError):
                self.remove()
            raise

    def _create_role(self, hw: RoleHardware) -> None:
        profile, layout, name = hw.profile, detect(), f"{self.prefix}-{hw.role}"
        controllers: set[str] = set()
        if profile.cpus is not None:
            controllers |= cpu.controllers_for(profile.cpus, layout.version)
        if profile.memory is not None:
            controllers.add("memory")
        if layout.version == 2 and any(v.throttled for v in profile.volumes.values()):
            controllers.add("io")
        group = Cgroup(name, controllers, layout)
        if controllers:
            hw.group = group
            group.create()
        if profile.cpus is not None:
            self._add(hw, cpu.CpuQuota(group, profile.cpus, self.scale))
        if profile.memory is not None:
            self._add(hw, MemoryCap(group, profile.memory))
        for volume, vclass in profile.volumes.items():
            base = self.workdir / "volumes"
            loop = LoopVolume(group, volume, vclass, base / f"{name}-{volume}.img", base / hw.role / volume)
            hw.volumes[volume] = loop
            self._add(hw, loop)
        self._create_devices(hw, name)
        if profile.link is not None:
            hw.link = NamespaceLink(name, profile.link)
            self._add(hw, hw.link)

    def _create_devices(self, hw: RoleHardware, name: str) -> None:
        """One served device model per device the role's volumes name; its volumes are
        directories of its one filesystem."""
        mounts: dict[str, list[str]] = {}
        for volume, (device, _) in hw.profile.devices.items():
            mounts.setdefault(device, []).append(volume)
        for device, volumes in mounts.items():
            model = hw.profile.devices[volumes[0]][1]
            served = ModelDevice(device, model, self.workdir / "devices" / name, tuple(volumes))
            hw.devices[device] = served
            self._add(hw, served)

    @staticmethod
    def _add(hw: RoleHardware, resource: RoleResource) -> None:
        hw.resources.append(resource)  # listed first, so a half-made resource is removed too
        resource.create()

    def remove(self) -> None:
        """Remove everything, role by role in reverse; every step runs even if one fails, and the
        failures are raised together at the end."""
        errors: list[str] = []
        with interrupts_deferred():
            for hw in reversed(list({id(h): h for h in self.roles.values()}.values())):
                if hw.group is not None:  # processes go first: a busy mount or namespace stays
                    _collect(errors, hw.group.remove)
                for resource in reversed(hw.resources):
                    _collect(errors, resource.remove)
                hw.resources.clear()
            self.roles.clear()
        if errors:
            raise ProfileError("removing the cell's hardware: " + "; ".join(errors))

    # --- what the cell's processes see ---------------------------------------------------------

    def _loop_paths(self) -> dict[str, Path]:
        """``{"role/volume": mount path}`` of the loop volumes."""
        return {f"{r}/{v}": loop.mount_path for r, hw in self.roles.items() for v, loop in hw.volumes.items()}

    @property
    def volume_paths(self) -> dict[str, Path]:
        """``{"role/volume": mount path}`` for the start command's ``{volume.NAME}``."""
        paths = self._loop_paths()
        for r, hw in self.roles.items():
            for device in hw.devices.values():
                paths |= {f"{r}/{v}": path for v, path in device.paths.items()}
        return paths

    @property
    def storage_paths(self) -> dict[str, Path]:
        """One path on each storage device of the cell, for a baseline measured once per device:
        ``{"role/volume": mount}`` for a loop volume, ``{"role/data+log": a mount}`` for a device
        model holding several volumes (named as its figures are)."""
        paths = self._loop_paths()
        for r, hw in self.roles.items():
            paths |= {f"{r}/{'+'.join(d.mounts)}": d.paths[d.mounts[0]] for d in hw.devices.values()}
        return paths

    def device_failures(self) -> list[str]:
        """Why each device model whose daemon died is gone (``device disk: the model's daemon
        died (killed by signal 9)``): a cell on a dead device has lost its disk."""
        return [
            f"device {d.name}: the model's daemon died ({why})"
            for hw in self.roles.values()
            for d in hw.devices.values()
            if (why := d.failure()) is not None
        ]

    def device_mounts(self, role: str) -> dict[str, tuple[str, ...]]:
        """``{device: (volume, …)}``: the volumes each of the role's device models holds."""
        return {name: device.mounts for name, device in self._role(role).devices.items()}

    @property
    def addresses(self) -> dict[str, str]:
        """``{role: address}`` of every role on a profile, for ``{address.ROLE}``: its namespace's
        address across its link, or loopback when its profile has none (the role is on this box, as
        a study that sets one box against two puts it)."""
        return {r: hw.link.address if hw.link is not None else LOOPBACK for r, hw in self.roles.items()}

    @property
    def host_addresses(self) -> dict[str, str]:
        """``{role: address}`` of the host's end of each role's link: what a process inside the
        namespace uses to reach a service on the host (127.0.0.1 there is the namespace's own)."""
        return {r: hw.link.host_address for r, hw in self.roles.items() if hw.link is not None}

    def launch_prefix(self, role: str, also: Sequence[Path] = ()) -> list[str]:
        """An argv prefix that puts the launched process in the role's cgroups and namespace before
        it execs, so it and every child run on the profile from their first instruction; ``also``:
        more ``cgroup.procs`` files to join first, in the same shell (a placement's cpuset)."""
        hw = self._role(role)
        procs: list[str] = [str(p) for p in also]
        enter: list[str] = []
        for resource in hw.resources:
            procs += [str(p) for p in resource.procs_files() if str(p) not in procs]
            enter += resource.enter_argv()
        if not procs and not enter:
            return []
        joins = "".join(f"echo $$ > {shlex.quote(p)} && " for p in procs)
        return ["sh", "-c", f'{joins}exec "$@"', "caplab-launch", *enter]

    def attach(self, role: str, pid: int, *, with_children: bool = True) -> None:
        """Move a running process (and, by default, its descendants) into the role's cgroups; what
        it forks afterwards follows. A role with a link raises ``ProfileError`` if the process
        does not already run in the role's namespace: a process cannot be moved into one."""
        hw = self._role(role)
        pids = [pid, *descendants(pid)] if with_children else [pid]
        if hw.link is not None:
            hw.link.attach(pid)  # checked first: a refused process is left where it was
        for resource in hw.resources:
            if resource is hw.link:
                continue
            for member in pids:
                try:
                    resource.attach(member)
                except ProfileError:
                    if Path(f"/proc/{member}").exists() or member == pid:
                        raise

    def pids(self, role: str) -> list[int]:
        """The processes now in the role's cgroups (a runner compares them with the processes its
        match found, to report one that ran outside its profile)."""
        group = self._role(role).group
        return group.pids() if group is not None else []

    def usage(self, role: str) -> dict[str, Usage]:
        """The kernel's read-outs for a role: ``cpu``, ``memory``, ``link``, ``volume:NAME``,
        ``device:NAME`` (a device model: its loop device and its daemon's CPU, caplab's cost)."""
        hw = self._role(role)
        out: dict[str, Usage] = {}
        for resource in hw.resources:
            key = resource.kind
            if isinstance(resource, LoopVolume | ModelDevice):
                key = f"{resource.kind}:{resource.name}"
            out[key] = resource.usage()
        return out

    def describe(self) -> dict[str, list[str]]:
        """Each role's profile in words, both ways where the CPU scale applies, and the roles it
        shares one machine with."""

        def name(role: str, profile: Profile) -> str:
            machine = self.shared.get(role)
            others = [r for r, m in self.shared.items() if m == machine and r != role and r in self.profiles]
            return (
                f"profile {profile.name} (one machine with {', '.join(others)})"
                if others
                else f"profile {profile.name}"
            )

        return {role: [name(role, p), *p.describe(self.scale)] for role, p in self.profiles.items()}

    def _role(self, role: str) -> RoleHardware:
        if role not in self.roles:
            known = ", ".join(self.profiles) or "none"
            raise ProfileError(f"no hardware for role {role!r} in this cell (roles: {known})")
        return self.roles[role]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from each process's parent in /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], list(children.get(pid, []))
    while queue:
        child = queue.pop()
        found.append(child)
        queue += children.get(child, [])
    return found


def _collect(errors: list[str], step: Callable[[], None]) -> None:
    try:
        step()
    except (ProfileError, OSError) as exc:
        errors.append(str(exc))


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C (and SIGTERM, which caplab's CLI takes as one) while removing, then deliver it:
    a half-removed cell is the worst leftover."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:
        raise KeyboardInterrupt
