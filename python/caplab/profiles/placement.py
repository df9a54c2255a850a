"""Placement: the generator and the system under test on separate CPUs of this host.

On one machine the generator (caplab's process and its engine threads, its collectors, its daemons:
link delay, device models) competes with the system for the same cores, and a busy host then says
nothing about which of the two a bigger server would have helped. Where the host has at least two
CPUs and a cpuset cgroup controller, a cell runs with caplab's own process in a cpuset of its own
(the generator's CPUs: the first, by default) and the system's start command, with everything it
starts, in another (the rest). Everything made is removed after the cell, also on failure and
Ctrl-C: caplab's process is moved back to the cpuset it came from, and so is any process of the
system moved here that still runs (the CLI's, which caplab did not start).

`plan_placement` decides (pure but for reading the host's CPUs); `Placed` applies. ``shared`` keeps
the old behaviour: everything on every CPU, which the report then says.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from caplab.profiles.cgroup import Cgroup, CgroupLayout, detect
from caplab.profiles.errors import ProfileError
from caplab.profiles.hardware import interrupts_deferred, owner_prefix

__all__ = ["SHARED", "CpuPlacement", "Placed", "format_cpus", "host_cpus", "parse_cpus", "plan_placement"]

SHARED = "shared"
"""The study's ``isolation: shared``: no placement, the generator and the system share every CPU."""


def parse_cpus(text: str) -> list[int]:
    """``"0"``, ``"1-3"``, ``"0,2-3"`` as a sorted list of CPU numbers; ProfileError when malformed."""
    out: set[int] = set()
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            lo, hi = int(first), int(last or first)
            if lo > hi or lo < 0:
                raise ValueError(part)
            out.update(range(lo, hi + 1))
    except ValueError:
        raise ProfileError(f"CPU list {text!r}: expected numbers and ranges, like 0 or 1-3 or 0,2") from None
    return sorted(out)


def format_cpus(cpus: list[int]) -> str:
    """The kernel's list form: ``[0, 1, 2, 5]`` as ``0-2,5``."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def host_cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


@dataclass(frozen=True)
class CpuPlacement:
    """The generator's and the system's CPUs (kernel list form), or None for both when they share
    the host; ``note`` says why they share."""

    generator: str | None
    system: str | None
    note: str | None = None

    @property
    def isolated(self) -> bool:
        return self.generator is not None and self.system is not None

    @property
    def system_cpus(self) -> int | None:
        """How many CPUs the system has to itself (profile quotas must fit in them)."""
        return len(parse_cpus(self.system)) if self.system is not None else None

    def describe(self) -> str:
        """One line for the report: where each ran, or that they shared and what that means."""
        if self.isolated:
            assert self.generator is not None and self.system is not None
            return f"generator on {_cpus_word(self.generator)}; roles on {_cpus_word(self.system)}"
        return (
            f"generator and system shared the host's CPUs ({self.note or 'not isolated'}): the "
            "generator's work competed with the system's, and a busy host counts as the system's "
            "limit only where its roles account for it"
        )

    def to_json(self) -> dict[str, str | None]:
        return {"generator": self.generator, "system": self.system, "text": self.describe()}


def _cpus_word(cpus: str) -> str:
    return f"CPU {cpus}" if len(parse_cpus(cpus)) == 1 else f"CPUs {cpus}"


def plan_placement(
    requested: str | Mapping[str, str] | None,
    available: list[int] | None = None,
    layout: CgroupLayout | None = None,
) -> CpuPlacement:
    """Where a cell runs its generator and its system: ``requested`` is the study's ``isolation``
    (``shared``, ``{generator: "0", system: "1"}``, or None for the default: the first CPU for the
    generator and the rest for the system, where there are at least two)."""
    if requested == SHARED:
        return CpuPlacement(None, None, "isolation: shared was asked for")
    cpus = available if available is not None else host_cpus()
    if not (layout or detect()).available("cpuset"):
        return CpuPlacement(None, None, "no cpuset cgroup controller on this machine")
    if isinstance(requested, Mapping):
        generator, system = parse_cpus(requested["generator"]), parse_cpus(requested["system"])
        unknown = sorted(set(generator + system) - set(cpus))
        if unknown:
            raise ProfileError(
                f"isolation names CPU(s) {format_cpus(unknown)}; this host has {format_cpus(cpus)}"
            )
        if set(generator) & set(system):
            raise ProfileError("isolation: the generator's and the system's CPUs overlap")
        return CpuPlacement(format_cpus(generator), format_cpus(system))
    if len(cpus) < 2:
        return CpuPlacement(None, None, f"one CPU ({format_cpus(cpus)}): they cannot be separated")
    return CpuPlacement(str(cpus[0]), format_cpus(cpus[1:]))


class Placed:
    """A `CpuPlacement` applied: two cpuset groups, caplab's process in the generator's. Use as a
    context manager; ``system_prefix()`` is the argv prefix that starts a command in the system's."""

    def __init__(self, placement: CpuPlacement, layout: CgroupLayout | None = None) -> None:
        self.placement = placement
        self.layout = layout or detect()
        self.generator: Cgroup | None = None
        self.system: Cgroup | None = None
        self._homes: dict[str, Path] = {}
        """The groups caplab's process came from (per controller), to go back to."""
        self._moved: dict[int, Path] = {}
        """Processes of the system moved here (not started here), and the group each came from."""

    def __enter__(self) -> Placed:
        if not self.placement.isolated:
            return self
        try:
            self._apply()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with interrupts_deferred():  # a second Ctrl-C must not leave caplab on one CPU for good
            self.remove()

    def _apply(self) -> None:
        assert self.placement.generator is not None and self.placement.system is not None
        prefix = owner_prefix()
        # In the cpu controller too, at its default weight: a group there is what a test (or an
        # operator) weighs against the machine's other jobs, as it can a profile's.
        controllers = {"cpuset", "cpu"} if self.layout.available("cpu") else {"cpuset"}
        for role, cpus in (("generator", self.placement.generator), ("system", self.placement.system)):
            group = Cgroup(f"{prefix}-{role}", controllers, self.layout)
            setattr(self, role, group)
            group.create()
            group.write("cpuset", "cpuset.cpus", cpus)
        self._homes = {c: own_group(c, self.layout) for c in sorted(controllers)}
        assert self.generator is not None
        self.generator.attach(os.getpid())  # every thread of the process moves with it

    def system_procs(self) -> list[Path]:
        """The system's groups' ``cgroup.procs`` files (none when not isolated): what a launch
        prefix writes its shell's pid to."""
        return self.system.procs_files() if self.system is not None else []

    def system_prefix(self) -> list[str]:
        """``sh -c 'echo $$ > …/cgroup.procs && exec "$@"'``: the command, and all it starts, on the
        system's CPUs from its first instruction (empty when not isolated)."""
        if self.system is None:
            return []
        procs = self.system.procs_files()
        joins = "".join(f"echo $$ > {shlex.quote(str(p))} && " for p in procs)
        return ["sh", "-c", f'{joins}exec "$@"', "caplab-place"]

    def move_system(self, pids: list[int]) -> None:
        """Puts running processes of the system (one caplab did not start) on the system's CPUs;
        they go back where they were when the placement is removed."""
        if self.system is None:
            return
        for pid in pids:
            home = process_cpuset(pid, self.layout)
            if home is None:
                continue  # gone
            with contextlib.suppress(ProfileError):  # ended meanwhile
                # The cpuset only: it is the one group it goes back from (the cpu controller's
                # would be removed with it still inside, and that kills what is left in a group).
                self.system.attach(pid, {"cpuset"})
                self._moved[pid] = home

    def remove(self) -> None:
        """caplab's process and the moved processes back home, then both groups removed (whatever
        the system left in its group after the cell is killed with it)."""
        errors: list[str] = []
        homes, self._homes = self._homes, {}
        for home in sorted(set(homes.values())):
            _collect(errors, lambda back=home: _join(back, os.getpid()))  # type: ignore[misc]
        for pid, home in self._moved.items():
            with contextlib.suppress(ProfileError):
                _join(home, pid)
        self._moved = {}
        for group in (self.generator, self.system):
            if group is not None:
                _collect(errors, group.remove)
        self.generator = self.system = None
        if errors:
            raise ProfileError("removing the placement: " + "; ".join(errors))


def _collect(errors: list[str], step: Callable[[], None]) -> None:
    try:
        step()
    except (ProfileError, OSError) as exc:
        errors.append(str(exc))


def _join(directory: Path, pid: int) -> None:
    try:
        (directory / "cgroup.procs").write_text(str(pid))
    except ProcessLookupError:
        pass
    except OSError as exc:
        raise ProfileError(f"cgroup {directory}: cannot move pid {pid} back: {exc.strerror}") from exc


def own_group(controller: str, layout: CgroupLayout) -> Path:
    home = process_group(os.getpid(), controller, layout)
    if home is None:
        raise ProfileError(f"cannot read this process's {controller} cgroup (/proc/self/cgroup)")
    return home


def process_cpuset(pid: int, layout: CgroupLayout) -> Path | None:
    """The directory of the cpuset group ``pid`` is in (v1: the cpuset hierarchy's; v2: its one group)."""
    return process_group(pid, "cpuset", layout)


def process_group(pid: int, controller: str, layout: CgroupLayout) -> Path | None:
    """The directory of ``pid``'s group in ``controller``'s hierarchy (v2: its one group)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    root = layout.root_of(controller)
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",")
        if (layout.version == 1 and controller in names) or (layout.version == 2 and controllers == ""):
            return root / path.lstrip("/")
    return None


@contextlib.contextmanager
def placed(placement: CpuPlacement) -> Iterator[Placed]:
    """``with placed(plan) as place:``: the placement applied for the block, removed after it."""
    with Placed(placement) as place:
        yield place
