"""A cell's hardware as the study runner applies it: each role's profile made before the SUT
starts and removed after it stops (also on failure and Ctrl-C), the SUT's commands and the target
bound to the cell's volumes and addresses, and the processes of each role put into its profile.

How processes get there: when one role is plainly the one the start command launches (the only
role, the only one with a link, or one machine all the local roles share), the command runs under
that role's launch prefix, so every process is on the profile from its first instruction.
Otherwise each role's ``match`` is polled every 100 ms during the cell and what it finds is
attached (its children follow from fork); the results say how long a process ran outside its
profile before that.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from caplab.collect import ProfileSource, RoleSpec
from caplab.collect.proctable import YOUNG_S, boot_clock, cmdline, list_pids, read_stat
from caplab.json_types import JsonDict
from caplab.profiles import CellHardware, Profile, ProfileError, check_support, sweep_leftovers
from caplab.profiles.design import role_hardware
from caplab.profiles.placeholders import fill
from caplab.spec.study import Study, StudyConfig

if TYPE_CHECKING:
    from caplab.study.plan import HardwarePlan

ATTACH_POLL_S = 0.1


class HardwareUnavailable(Exception):
    """This machine lacks a mechanism the study's profiles need; nothing was applied."""


def shared_machines(config: StudyConfig) -> dict[str, str]:
    """Role → machine for roles sharing one profile's hardware: consolidation's together, or
    the roles' own ``machine:``."""
    c = config.consolidation
    if c is not None:
        return {role: "together" for role in c.apart} if config.placement == "together" else {}
    roles = config.sut.roles if config.sut else {}
    return {name: role.machine for name, role in roles.items() if role.machine is not None}


def study_profiles(study: Study) -> list[Profile]:
    """Every profile some cell puts a role on."""
    seen: dict[str, Profile] = {}
    for cell in study.cells:
        for profile in role_hardware(cell.config).values():
            seen.setdefault(profile.name, profile)
    return list(seen.values())


def preflight(study: Study) -> list[str]:
    """Checks the machine can apply every profile the study uses, then removes what crashed runs
    left behind (their loop devices and cgroups would skew this one). Returns what was swept;
    raises ``HardwareUnavailable`` naming each missing mechanism."""
    profiles = study_profiles(study)
    if not profiles:
        return []
    problems = check_support(profiles)
    if problems:
        raise HardwareUnavailable(
            "this study's hardware profiles cannot be applied on this machine: " + "; ".join(problems)
        )
    return sweep_leftovers()


@contextlib.contextmanager
def cell_hardware(plan: HardwarePlan, workdir: Path) -> Iterator[CellHardware | None]:
    """The cell's hardware for the life of the block (None when no role is on a profile), its
    volumes' files and mount points under ``workdir`` (in the replicate's runtime directory, where
    the servers' users can reach them)."""
    if not plan.profiles:
        yield None
        return
    try:
        with CellHardware(workdir, dict(plan.profiles), plan.cpu_scale, dict(plan.shared)) as hw:
            try:
                yield hw
            except Exception as failed:
                # A device model's daemon that died took the disk with it: that is why the cell
                # failed, whatever its system then said (an I/O error, a server that exited).
                died = hw.device_failures()
                if died:
                    raise ProfileError("; ".join(died)) from failed
                raise
    finally:
        for directory in (workdir / "volumes", workdir):  # volumes took their files
            with contextlib.suppress(OSError):
                for child in directory.iterdir():
                    if child.is_dir():
                        child.rmdir()
                directory.rmdir()


def bind(config: StudyConfig, hw: CellHardware | None) -> StudyConfig:
    """The cell's configuration with ``{volume.NAME}`` and ``{address.ROLE}`` filled in."""
    if hw is None or config.sut is None:
        return config
    volumes, addresses = hw.volume_paths, hw.addresses

    def sub(text: str | None) -> str | None:
        return fill(text, volumes, addresses) if text else text

    sut = config.sut
    ready = sut.ready
    if ready is not None:
        ready = ready.model_copy(
            update={"url": sub(ready.url), "command": sub(ready.command), "host": sub(ready.host)}
        )
    metrics = sut.metrics
    if metrics is not None:
        metrics = metrics.model_copy(update={"url": sub(metrics.url)})
    sut = sut.model_copy(
        update={"start": sub(sut.start), "stop": sub(sut.stop), "ready": ready, "metrics": metrics}
    )
    target = config.target
    for kind in ("http", "tcp", "postgres"):
        payload = getattr(target, kind) if target is not None else None
        if target is not None and payload is not None:
            target = target.model_copy(update={kind: payload.model_copy(update={"url": sub(payload.url)})})
    job = config.job
    if job is not None:
        phases = [p.model_copy(update={"run": sub(p.run)}) for p in job.phases]
        job = job.model_copy(update={"reset": sub(job.reset), "prepare": sub(job.prepare), "phases": phases})
    return config.model_copy(update={"sut": sut, "target": target, "job": job})


def launched_role(config: StudyConfig, profiles: Mapping[str, Profile]) -> str | None:
    """The role whose launch prefix the start command runs under, if one plainly owns it (of the
    roles on a ``profiles``)."""
    linked = [role for role, p in profiles.items() if p.link is not None]
    if len(linked) > 1:
        raise ProfileError(
            f"roles {', '.join(linked)} each have a link, but one start command runs in one network "
            "namespace: give a link to one role only"
        )
    if linked:
        return linked[0]
    declared = config.sut.roles if config.sut else {}
    if len(profiles) == 1 and len(declared) <= 1:
        return next(iter(profiles))
    shared = shared_machines(config)
    local = {name for name, role in declared.items() if role.host is None}
    if len(set(shared.values())) == 1 and set(shared) == set(profiles) and local <= set(shared):
        # One combined server and nothing else: the start command runs on it whole. A role off the
        # machine (a mail system's mailbox beside a combined transport and access) must not be
        # born inside its cgroup, so then each role's processes are attached by their match.
        return next(iter(profiles))
    return None


def profile_source(hw: CellHardware, role: str) -> ProfileSource:
    """What the collectors read for a role; volume figures are named by the volume, or
    ``ROLE.VOLUME`` when two roles have a volume of that name. A device model's figures are named
    by the volumes it holds (``data+log``): the device is what they share."""
    names = [key.split("/", 1)[1] for key in hw.volume_paths]
    labels = {v: v if names.count(v) == 1 else f"{role}.{v}" for v in hw.profiles[role].volumes}
    for device, mounts in hw.device_mounts(role).items():  # one device holding data and log: data+log
        label = "+".join(mounts)
        labels[device] = label if all(names.count(m) == 1 for m in mounts) else f"{role}.{label}"
    limits = {
        name: {
            figure: value if figure.endswith("iops") else value / 1e6  # bytes/s → MB/s, as collected
            for figure, value in (
                ("read_iops", v.read_iops),
                ("write_iops", v.write_iops),
                ("read_mb_s", v.read_bw),
                ("write_mb_s", v.write_bw),
            )
            if value is not None
        }
        for name, v in hw.profiles[role].volumes.items()
    }
    return ProfileSource(lambda: hw.usage(role), labels, limits, hw.shared.get(role))


def with_profiles(roles: list[RoleSpec], hw: CellHardware | None) -> list[RoleSpec]:
    """The roles, each on a profile carrying its profile's figures to the collectors."""
    if hw is None:
        return roles
    return [replace(r, profile=profile_source(hw, r.name)) if r.name in hw.profiles else r for r in roles]


def oom_kills(hw: CellHardware) -> dict[str, int]:
    """OOM kills so far per role with a memory limit."""
    out: dict[str, int] = {}
    for role, profile in hw.profiles.items():
        if profile.memory is not None:
            with contextlib.suppress(ProfileError, OSError):
                kills = hw.usage(role).get("memory", {}).get("oom_kills", 0)
                out[role] = int(kills) if isinstance(kills, int | float) else 0
    return out


class Attacher:
    """Puts the processes each role's ``match`` finds into the role's profile, polling every
    100 ms until stopped; remembers how long each ran outside it first.

    A pass reads only what is new: processes it has not settled yet (a process is settled once it
    is on a profile, or old enough not to exec into a match, ``YOUNG_S``). Children are born in
    their parent's cgroup, so after the first pass there is rarely anything to attach — but a mail
    server forks a process per session, and a pass that read every command line ten times a second
    cost the system under test a quarter of the host."""

    def __init__(self, hw: CellHardware, matches: dict[str, str]) -> None:
        self.hw = hw
        self.matches = matches
        self.outside: dict[str, dict[str, float]] = {}
        """``{role: {"processes": n, "longest_s": s}}`` of processes found outside their profile."""
        self.errors: list[str] = []
        self._settled: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="caplab-attach", daemon=True)
        self._skip = {os.getpid(), *(p.pid for p in psutil.Process().parents())}

    def start(self) -> None:
        self.attach_now()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(ATTACH_POLL_S):
            self.attach_now()

    def attach_now(self) -> None:
        """One pass: every matching process not yet on its role's profile is attached."""
        live = list_pids()
        self._settled &= live  # a pid that ended may come back as another process
        fresh = live - self._settled - self._skip
        if not fresh:
            return
        now = boot_clock()
        self._place(self._matching(fresh, now), now)

    def _matching(self, fresh: set[int], now: float) -> dict[int, tuple[str, float]]:
        """The fresh processes some role's ``match`` finds, with their role and start time; a
        process old enough not to exec into a match any more is settled without a role."""
        found: dict[int, tuple[str, float]] = {}
        for pid in fresh:
            stat = read_stat(pid)
            if stat is None:
                continue
            line = cmdline(pid)
            role = next((r for r, m in self.matches.items() if m in line), None)
            if role is not None:
                found[pid] = (role, stat.started_s)
            elif now - stat.started_s >= YOUNG_S:
                self._settled.add(pid)
        return found

    def _place(self, found: dict[int, tuple[str, float]], now: float) -> None:
        """Each found process onto its role's profile, unless it is there already."""
        # A role's processes are read only when something matched it: a cgroup's list is slow to read.
        inside: dict[str, set[int] | None] = {}
        for pid, (role, started_s) in found.items():
            if role not in inside:
                inside[role] = self._members(role)
            members = inside[role]
            if members is None:
                continue
            if pid not in members:
                self._attach(role, pid, started_s, now)
            if now - started_s >= YOUNG_S:
                # Settled only once too old to exec again: a shell still holding the whole start
                # command's words (both roles' matches) execs into one role's program a moment later.
                self._settled.add(pid)

    def _members(self, role: str) -> set[int] | None:
        """The processes on a role's profile, or None when the profile is not there (yet): the
        next pass tries again."""
        try:
            return set(self.hw.pids(role))
        except (ProfileError, OSError):
            return None

    def _attach(self, role: str, pid: int, started_s: float, now_s: float) -> None:
        try:
            self.hw.attach(role, pid)
        except (ProfileError, OSError) as exc:
            if psutil.pid_exists(pid) and len(self.errors) < 10:
                self.errors.append(f"role {role}: {exc}")
            return
        seen = self.outside.setdefault(role, {"processes": 0, "longest_s": 0.0})
        seen["processes"] += 1
        seen["longest_s"] = max(seen["longest_s"], max(0.0, now_s - started_s))


@dataclass(frozen=True)
class CellHardwareDescription:
    """What a cell ran on, for its metrics: each role's profile in words, the CPU scale, how the
    processes got onto their profiles and whether any ran outside first."""

    cpu_scale: float
    roles: Mapping[str, list[str]]
    launched_under: str | None = None
    ran_outside: Mapping[str, str] | None = None
    """Each role whose processes ran outside its profile before being attached (empty when none
    did); None when nothing attached processes."""
    attach_errors: tuple[str, ...] = ()

    def to_json(self) -> JsonDict:
        """The stored form (a cell's ``metrics.hardware``): the optional parts only when there."""
        out: JsonDict = {"scale": {"cpu": self.cpu_scale}, "roles": dict(self.roles)}
        if self.launched_under is not None:
            out["launched_under"] = self.launched_under
        if self.ran_outside is not None:
            out["ran_outside"] = dict(self.ran_outside)
        if self.attach_errors:
            out["attach_errors"] = list(self.attach_errors)
        return out


def describe(
    cpu_scale: float, hw: CellHardware, launched: str | None, attacher: Attacher | None
) -> CellHardwareDescription:
    """What the cell ran on, as ``CellHardwareDescription`` says."""
    if attacher is None:
        return CellHardwareDescription(cpu_scale, hw.describe(), launched)
    outside = {
        role: f"{int(v['processes'])} process(es) ran outside the profile for up to "
        f"{v['longest_s']:.2f}s before being attached"
        for role, v in attacher.outside.items()
    }
    return CellHardwareDescription(cpu_scale, hw.describe(), launched, outside, tuple(attacher.errors))
