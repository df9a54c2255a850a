"""Process roles: the resources of one part of the system under test, summed over its process tree.

A role is declared as ``{pid: N}``, ``{match: "command-line substring"}``, ``{cgroup: path}``,
``{user: name}`` or ``{pidfile: path}``; its resources are summed over the matching processes and all
their descendants, wherever they run: a server that daemonises (``pg_ctl`` detaches PostgreSQL from
the start command's tree) is still found by its pidfile, its user or its cgroup. The tree is
resolved again at every sample (and a pidfile read again), so workers forked mid-trial and a
restarted or promoted server are followed. A role that matched no process at any sample of a trial
is an error of that trial (`RoleCollector.missing`), never a 0 % figure: such a sample carries only
``processes`` 0.

CPU is attributed per process from its own counters, so the figure is what the role really used:
- a process seen at the previous sample counts its CPU since then;
- a process first seen now counts all its CPU if it was created during the interval, and nothing
  yet otherwise (it existed before but has only now joined the tree: its past is not this role's);
- a descendant that started and ended between two samples is seen only once its parent reaps it,
  in the parent's ``children_user``/``children_system``; that growth is added, less whatever had
  already been counted for tracked children that ended (so a child is never counted twice).

``rss_mb`` sums resident sets, so pages shared between forked workers count once per process (an
upper bound, as ``top`` would add them). ``read_mb_s``/``write_mb_s`` are bytes the processes made
the storage layer read or write (``/proc/PID/io`` ``read_bytes``/``write_bytes``), not page-cache
hits. Context switches are summed over every live thread (``/proc/PID/task``), because
``/proc/PID/status`` only shows the main thread's.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from caplab.collect.base import ResourceSample
from caplab.collect.proctable import CLOCK_TICKS, ProcessTable, ProcStat, Snapshot
from caplab.collect.profile import ProfileSource

__all__ = ["SELECTORS", "RoleCollector", "RoleSpec", "cgroup_dir", "pidfile_pid", "user_id"]

MIB = 1024 * 1024
MB = 1_000_000
RESERVED_NAMES = frozenset({"host", "generator"})
"""Keys ``cell_resources`` uses for other scopes; a role may not take them."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
SELECTORS = ("pid", "match", "cgroup", "user", "pidfile", "host")
"""How a role names its processes: exactly one of these."""


@dataclass(frozen=True)
class RoleSpec:
    """One process group of the system under test: exactly one of ``pid``, ``match``, ``cgroup``,
    ``user``, ``pidfile`` (on this machine) or ``host`` (a remote host's name: its node_exporter's
    figures, at host level)."""

    name: str
    pid: int | None = None
    match: str | None = None
    cgroup: str | None = None
    host: str | None = None
    user: str | None = None
    """Every process of this user (a name or a numeric uid), and their descendants."""
    pidfile: str | None = None
    """A file whose first line is the role's main pid (``postmaster.pid``), read at every sample."""
    profile: ProfileSource | None = field(default=None, compare=False)
    """The role's hardware profile, when a study put it on one: its figures are collected too."""

    def __post_init__(self) -> None:
        given = [k for k in SELECTORS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"role {self.name!r}: give exactly one of {', '.join(SELECTORS)} (got {given})")
        if not self.name or self.name in RESERVED_NAMES or ":" in self.name:
            reserved = ", ".join(sorted(RESERVED_NAMES))
            raise ValueError(f"role name {self.name!r} is empty, has ':' or is reserved ({reserved})")
        if self.match is not None and not self.match.strip():
            raise ValueError(f"role {self.name!r}: match must not be blank (it would match everything)")

    def describe(self) -> str:
        if self.pid is not None:
            return f"pid {self.pid}"
        if self.match is not None:
            return f"match {self.match!r}"
        if self.host is not None:
            return f"host {self.host} (host level)"
        if self.user is not None:
            return f"user {self.user}"
        if self.pidfile is not None:
            return f"pidfile {self.pidfile}"
        return f"cgroup {self.cgroup}"


def cgroup_dir(path: str) -> Path | None:
    """The cgroup directory for ``path``: absolute as given, else under the unified hierarchy or, on a
    cgroup v1 host, under the first controller hierarchy that has it."""
    given = Path(path)
    if given.is_absolute() and (given / "cgroup.procs").is_file():
        return given
    rel = path.lstrip("/")
    candidates = [CGROUP_ROOT / rel]
    with contextlib.suppress(OSError):
        candidates += [CGROUP_ROOT / d / rel for d in sorted(os.listdir(CGROUP_ROOT))]
    return next((c for c in candidates if (c / "cgroup.procs").is_file()), None)


def _cgroup_pids(directory: Path) -> set[int]:
    """Every process in the cgroup and its sub-cgroups."""
    pids: set[int] = set()
    for root, _dirs, files in os.walk(directory):
        if "cgroup.procs" in files:
            try:
                text = (Path(root) / "cgroup.procs").read_text()
            except OSError:
                continue
            pids.update(int(line) for line in text.split())
    return pids


def pidfile_pid(path: str) -> int | None:
    """The pid a pidfile names on its first line (``postmaster.pid``, nginx's, most daemons'), or
    None when it is missing, empty or not a number (the server is stopped or still starting)."""
    try:
        with open(path, "rb") as f:
            first = f.readline().strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


def user_id(user: str) -> int | None:
    """The uid of a user name or a numeric uid; None for a name this machine does not know."""
    if user.isdigit():
        return int(user)
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


@dataclass(frozen=True)
class _Cpu:
    """Cumulative counters of one process: CPU seconds (its own and its reaped children's), IO bytes."""

    user: float = 0.0
    system: float = 0.0
    children_user: float = 0.0
    children_system: float = 0.0
    read_bytes: int = 0
    write_bytes: int = 0

    @property
    def total(self) -> tuple[float, float]:
        """User and system CPU of the process and of its reaped descendants."""
        return self.user + self.children_user, self.system + self.children_system


@dataclass(frozen=True)
class _Reading:
    ppid: int
    started_s: float
    """Creation time, seconds since boot (the clock ``/proc/PID/stat`` uses)."""
    cpu: _Cpu
    ctx_by_thread: dict[int, int]
    cpu_by_thread: dict[int, float]
    rss: int
    threads: int


_NO_CPU = _Cpu()


def _thread_stats(pid: int) -> dict[int, tuple[int, float]] | None:
    """Per live thread: context switches (voluntary + involuntary) and CPU seconds (user + system).
    None where /proc has no tasks. The CPU per thread shows a single-threaded bottleneck that the
    process total hides (one thread at 100 % of a core while the machine looks half idle)."""
    task_dir = f"/proc/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return None
    out: dict[int, tuple[int, float]] = {}
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/status", "rb") as f:
                ctx = _ctx_switches(f.read())
            with open(f"{task_dir}/{tid}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
        except (OSError, ValueError, IndexError):
            continue  # the thread ended while we read
        out[int(tid)] = (ctx, cpu)
    return out


@dataclass
class _Pending:
    """CPU already counted for tracked children that ended but whose parent may not have reaped them."""

    user: float = 0.0
    system: float = 0.0


class RoleCollector:
    """Scope ``role:NAME``: cpu_percent (user + system, 100 = one core), user_percent,
    system_percent, rss_mb, read_mb_s, write_mb_s, threads, ctx_switches_s, max_thread_cpu_percent
    (the busiest single thread, 100 = a whole core), processes, cpus (how many CPUs its processes
    may run on: fewer than the host's when a placement put the system on CPUs of its own)."""

    def __init__(self, spec: RoleSpec, table: ProcessTable | None = None) -> None:
        self.spec = spec
        self._table = table or ProcessTable()
        self._shared = table is not None
        """A table shared with other roles is read once per sample time; a role's own, at every call."""
        self.name = f"role:{spec.name}"
        self.pids: frozenset[int] = frozenset()
        """The processes found at the last reading (roots and descendants)."""
        self._excluded = _self_and_ancestors()
        self._prev: dict[tuple[int, float], _Reading] = {}
        self._pending: dict[int, _Pending] = {}
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""
        self._last_boot_s = 0.0
        self._samples = 0
        self._empty_samples = 0
        self._trial_samples = 0
        self._trial_found = 0
        self._io_denied: set[int] = set()

    @property
    def warning(self) -> str | None:
        """What the runner should tell the user about this role's figures, if anything."""
        notes = []
        if self._empty_samples:
            notes.append(
                f"role {self.spec.name!r} ({self.spec.describe()}) matched no process "
                f"at {self._empty_samples} of {self._samples} samples"
            )
        if self._io_denied:
            notes.append(
                f"role {self.spec.name!r}: IO counters not readable for {len(self._io_denied)} "
                "process(es) (permission); their IO is missing"
            )
        return "; ".join(notes) or None

    @property
    def missing(self) -> str | None:
        """The error of a trial in which the role matched no process at any sample: its figures
        would read 0 % for a system that was there all along, only not where the role looked."""
        if self._trial_samples and not self._trial_found:
            return f"role {self.spec.name} matched no process ({self.spec.describe()})"
        return None

    def start(self) -> None:
        self._trial_samples = self._trial_found = 0
        # The snapshot's clocks were read just before its counters, here and in sample(), so the
        # wall time and the counter deltas cover the same span.
        snapshot = self._table.at(None)
        self.sampled_at, self._last_boot_s = snapshot.monotonic_s, snapshot.boot_s
        self._prev = self._read_all(snapshot)
        self._pending = {}

    def sample(self, t: float) -> list[ResourceSample]:
        snapshot = self._table.at(t if self._shared else None)
        now_wall, now_boot = snapshot.monotonic_s, snapshot.boot_s
        readings = self._read_all(snapshot)
        wall = max(now_wall - self.sampled_at, 1e-9)
        user, system = self._cpu_delta(readings)
        read_b = write_b = ctx = 0
        busiest_thread = 0.0
        for key, r in readings.items():
            base = self._baseline(key, r)
            if base is r:
                continue  # joined the tree only now: it counts from the next sample on
            read_b += max(0, r.cpu.read_bytes - base.cpu.read_bytes)
            write_b += max(0, r.cpu.write_bytes - base.cpu.write_bytes)
            for tid, n in r.ctx_by_thread.items():
                # A thread first seen now was created during the interval: all its switches count.
                ctx += max(0, n - base.ctx_by_thread.get(tid, 0))
            for tid, c in r.cpu_by_thread.items():
                busiest_thread = max(busiest_thread, c - base.cpu_by_thread.get(tid, 0.0))
        self._samples += 1
        self._trial_samples += 1
        self._prev = readings
        self.sampled_at, self._last_boot_s = now_wall, now_boot
        if not readings:
            # Nothing matched: no figure but the count, so a role that is not there never reads 0 %.
            self._empty_samples += 1
            return [ResourceSample(t, self.name, "processes", 0.0)]
        self._trial_found += 1
        values = {
            "cpu_percent": (user + system) / wall * 100,
            "user_percent": user / wall * 100,
            "system_percent": system / wall * 100,
            "rss_mb": sum(r.rss for r in readings.values()) / MIB,
            "read_mb_s": read_b / MB / wall,
            "write_mb_s": write_b / MB / wall,
            "threads": float(sum(r.threads for r in readings.values())),
            "ctx_switches_s": ctx / wall,
            "max_thread_cpu_percent": min(busiest_thread / wall * 100, 100.0),
            "processes": float(len(readings)),
        }
        if allowed := _allowed_cpus(pid for pid, _ in readings):
            values["cpus"] = float(allowed)
        return [ResourceSample(t, self.name, metric, value) for metric, value in values.items()]

    def stop(self) -> None:
        self._prev = {}
        self._pending = {}

    # --- internals ----------------------------------------------------------------------------

    def _baseline(self, key: tuple[int, float], r: _Reading) -> _Reading:
        """What to subtract from ``r``: the previous reading; nothing (a zero reading) for a process
        created during the interval; ``r`` itself for one that has only now joined the tree."""
        prev = self._prev.get(key)
        if prev is not None:
            return prev
        # Start times are whole ticks, rounded down: one started just after the previous sample's
        # clock reading (and too late for its process list) can read up to a tick earlier.
        if r.started_s >= self._last_boot_s - 1 / CLOCK_TICKS:
            return _Reading(r.ppid, r.started_s, _NO_CPU, {}, {}, 0, 0)
        return r

    def _cpu_delta(self, readings: dict[tuple[int, float], _Reading]) -> tuple[float, float]:
        """User and system CPU seconds the role used since the last sample."""
        gone = {key[0]: r for key, r in self._prev.items() if key not in readings}
        for r in gone.values():
            pending = self._pending.setdefault(r.ppid, _Pending())
            u, s = r.cpu.total
            pending.user += u
            pending.system += s
        # A credit held for a process that has itself ended passes to its parent, which reaps the
        # whole subtree's CPU along with it.
        for pid in sorted(gone, key=lambda p: _depth(p, gone), reverse=True):
            held = self._pending.pop(pid, None)
            if held is not None:
                up = self._pending.setdefault(gone[pid].ppid, _Pending())
                up.user += held.user
                up.system += held.system
        user = system = 0.0
        for key, r in readings.items():
            base = self._baseline(key, r)
            user += max(0.0, r.cpu.user - base.cpu.user)
            system += max(0.0, r.cpu.system - base.cpu.system)
            reaped_user = max(0.0, r.cpu.children_user - base.cpu.children_user)
            reaped_system = max(0.0, r.cpu.children_system - base.cpu.children_system)
            credit = self._pending.get(key[0])
            if credit is not None:
                reaped_user, credit.user = _net(reaped_user, credit.user)
                reaped_system, credit.system = _net(reaped_system, credit.system)
            user += reaped_user
            system += reaped_system
        live = {key[0] for key in readings}
        self._pending = {pid: p for pid, p in self._pending.items() if pid in live}
        return user, system

    def _read_all(self, snapshot: Snapshot) -> dict[tuple[int, float], _Reading]:
        """Reads every process of the role, keyed by (pid, create time) so a reused pid is a new
        process. CPU, parent, start and resident set come from the snapshot; IO and context switches
        from each process's own files (a single-threaded process's are its status's, the busiest
        thread its own CPU)."""
        out: dict[tuple[int, float], _Reading] = {}
        for p in self._resolve(snapshot):
            try:
                read_bytes, write_bytes = self._io(p.pid)
                per_thread = _thread_stats(p.pid) if p.threads > 1 else _single_thread(p)
            except OSError:
                continue  # gone mid-read: it simply is not in this sample
            if per_thread is None:
                continue
            cpu = _Cpu(p.user_s, p.system_s, p.children_user_s, p.children_system_s, read_bytes, write_bytes)
            ctx = {tid: n for tid, (n, _) in per_thread.items()}
            thread_cpu = {tid: c for tid, (_, c) in per_thread.items()}
            reading = _Reading(p.ppid, p.started_s, cpu, ctx, thread_cpu, p.rss_bytes, p.threads)
            out[(p.pid, p.started_s)] = reading
        self.pids = frozenset(pid for pid, _ in out)
        return out

    def _io(self, pid: int) -> tuple[int, int]:
        """Bytes the process made storage read and write; zeros where /proc/PID/io is not ours to read."""
        try:
            with open(f"/proc/{pid}/io", "rb") as f:
                text = f.read()
        except PermissionError:
            self._io_denied.add(pid)
            return 0, 0
        read = _READ_BYTES.search(text)
        write = _WRITE_BYTES.search(text)
        return int(read[1]) if read else 0, int(write[1]) if write else 0

    def _resolve(self, snapshot: Snapshot) -> list[ProcStat]:
        """The role's processes now: the roots the spec names, then all their descendants, from
        the shared snapshot of /proc (sampled on the load's clock in the generator's own process,
        so it must be cheap)."""
        procs = snapshot.procs
        children: dict[int, list[int]] = defaultdict(list)
        for p in procs.values():
            children[p.ppid].append(p.pid)
        seen: set[int] = set()
        stack = [pid for pid in self._roots(snapshot) if pid in procs]
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            stack.extend(children.get(pid, ()))
        # The observer is never part of what it observes (its own figures are the generator scope).
        seen.discard(os.getpid())
        return [procs[pid] for pid in sorted(seen)]

    def _roots(self, snapshot: Snapshot) -> list[int]:
        spec = self.spec
        if spec.pid is not None:
            return [spec.pid]
        if spec.match is not None:
            needle = spec.match
            return [
                p.pid
                for p in snapshot.procs.values()
                if p.pid not in self._excluded and needle in self._table.cmdline(p, snapshot.boot_s)
            ]
        if spec.pidfile is not None:
            pid = pidfile_pid(spec.pidfile)
            return [pid] if pid is not None else []
        if spec.user is not None:
            uid = user_id(spec.user)
            return [p for p in snapshot.procs if p not in self._excluded and _owner(p) == uid]
        assert spec.cgroup is not None
        directory = cgroup_dir(spec.cgroup)
        return sorted(_cgroup_pids(directory)) if directory is not None else []


def _allowed_cpus(pids: Iterable[int]) -> int:
    """How many CPUs the role's processes may run on together (their affinity: a placement's
    cpuset sets it), 0 when none could be read. A role on one CPU of two is saturated at 100 %."""
    allowed: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            allowed |= os.sched_getaffinity(pid)
    return len(allowed)


def _single_thread(p: ProcStat) -> dict[int, tuple[int, float]] | None:
    """A single-threaded process's context switches (its status) and CPU (its stat's, already read)."""
    try:
        with open(f"/proc/{p.pid}/status", "rb") as f:
            ctx = _ctx_switches(f.read())
    except (OSError, ValueError):
        return None
    return {p.pid: (ctx, p.user_s + p.system_s)}


_READ_BYTES = re.compile(rb"^read_bytes: (\d+)", re.M)
_WRITE_BYTES = re.compile(rb"^write_bytes: (\d+)", re.M)
_CTX = re.compile(rb"ctxt_switches:\s*(\d+)")


def _ctx_switches(status: bytes) -> int:
    """Voluntary + involuntary context switches from a status file (its last lines: found by a
    regular expression, not a Python loop over its fifty)."""
    return sum(int(n) for n in _CTX.findall(status))


def _depth(pid: int, gone: dict[int, _Reading]) -> int:
    """How many ended ancestors ``pid`` has among ``gone`` (deepest credits move up first)."""
    depth = 0
    while pid in gone and depth < len(gone):
        pid = gone[pid].ppid
        depth += 1
    return depth


def _net(grown: float, credit: float) -> tuple[float, float]:
    """Reaped-children CPU not yet counted, and the credit left for children still to be reaped."""
    used = min(grown, credit)
    return grown - used, credit - used


def _self_and_ancestors() -> frozenset[int]:
    """caplab's process and the shells and launchers above it: their command lines often contain
    the very words a ``match`` looks for, and they are never the system under test."""
    pids = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        pids.update(p.pid for p in psutil.Process().parents())
    return frozenset(pids)
