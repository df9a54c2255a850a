"""Actions during a trial: faults and role changes (a switchover, a killed primary, any command)
fired at set times after the load starts or when a condition first holds on an interval (a
latency, a replication lag: analysis/trigger.py), each timed and its outcome kept, so that what the
load saw around it — the outage, the errors, the recovery — can be read from the trial's interval
series on the same clock.

The actions run on a thread of their own while the engine drives the load; each is a shell
command in the study's directory, stopped (its process group killed) at its timeout or when the
trial is interrupted; one still running when the load ends on time is let finish. A failed action
does not stop the trial: the load's view of it is the point.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caplab.analysis.phases import ManagerPhases
from caplab.analysis.recovery import Interval, Recovery, recovery, recovery_line
from caplab.analysis.trigger import Figure, Trigger, trigger_for
from caplab.engine import IntervalSnapshot, RunResult
from caplab.units import scrub

if TYPE_CHECKING:
    from caplab.spec import ActionSpec

OUTPUT_LINES = 5
"""The last lines of an action's output kept with its outcome (what a failed switchover said)."""
REALIGN_S = 0.05
"""How often an action waiting for its time looks again before the load's clock is known."""


@dataclass
class ActionOutcome:
    """One action as it happened; times in seconds from the load's start."""

    name: str
    command: str
    at_s: float | None
    """When it was due (None: on a condition, ``condition``)."""
    started_s: float | None = None
    ended_s: float | None = None
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    reported: dict[str, float] = field(default_factory=dict)
    """The numbers a JSON object at the end of its output gave (pgpair's role change:
    ``writable_after_s``, the group-level recovery), read before the output is cut short."""
    condition: str | None = None
    """What it waited for (``p99 > 50ms``, ``after steady``); ``triggered`` says what fired it."""
    triggered: str | None = None
    started_at: float | None = None
    """Its start on the wall clock (epoch seconds), read at the instant ``started_s`` was: what
    puts the times it reports about itself on the load's clock (analysis/phases.py)."""
    phases: ManagerPhases | None = None
    """The HA manager's phases, when its last JSON object had them (pgha's ``kill-primary``)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def fault_s(self) -> float | None:
        """When its fault struck on the load's clock: the instant the action reported for it (its
        SIGKILL), else its start; None when it never ran."""
        if self.started_s is None:
            return None
        if self.phases is None or self.started_at is None:
            return self.started_s
        return self.started_s + (self.phases.fault_at - self.started_at)

    def describe(self) -> str:
        if self.started_s is None and self.at_s is None:
            return f"{self.name}: not run ({self.triggered or (self.condition or '') + ' never held'})"
        if self.started_s is None:
            return f"{self.name}: not run (the trial ended at or before {self.at_s:g}s)"
        took = (self.ended_s or self.started_s) - self.started_s
        how = (
            f"timed out after {took:.2f}s"
            if self.timed_out
            else "done"
            if self.exit_code == 0
            else f"exited {self.exit_code}"
        )
        said = f": {self.output.splitlines()[-1]}" if self.output and not self.ok else ""
        why = f" ({self.triggered})" if self.triggered else ""
        return f"{self.name} at {self.started_s:.2f}s{why}: {how} in {took:.2f}s{said}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"fault_s": self.fault_s}


class TrialActions:
    """Fires a trial's actions on schedule from ``start()`` (called as the load starts), and those
    on a condition once ``observe`` (fed every interval on the load's clock) finds it holds; one
    action runs at a time, in the order they fell due.

    The times are on the load's clock, the one its interval series is on. That clock starts when
    the engine sends its first request, a little after ``start()`` (0.16 s in a quick
    availability-groups trial, seconds on a busy machine), and an action timed from ``start()``
    would read every recovery short by that much. Each interval tells where the load's clock
    began (its arrival less its end), so the schedule follows the load's clock from the first
    interval on, and an action's start and end, kept as instants, are put on it when the trial
    ends (the earliest arrival: the one least delayed on its way here)."""

    def __init__(
        self,
        actions: list[ActionSpec],
        declared: dict[str, str],
        directory: Path,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        self.directory = directory
        self.env = env
        self.prefix = list(prefix or [])
        """An argv the commands run under: the system's CPUs, where the study placed it apart
        (a command that restarts a server must not start it on the generator's)."""
        """The commands' environment (a study's: the SUT's, so ``python -m …`` is caplab's own)."""
        self._triggers: list[Trigger | None] = [trigger_for(a.when, a.after) for a in actions]
        self.outcomes = [
            ActionOutcome(
                a.label,
                declared[a.do] if a.do is not None else a.run or "",
                a.at,
                condition=t.text if t is not None else None,
            )
            for a, t in zip(actions, self._triggers, strict=True)
        ]
        self._timeouts = [a.timeout for a in actions]
        self._due: queue.Queue[int] = queue.Queue()
        """Conditional actions whose condition held, by index (-1: the schedule has ended)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._load_t0: float | None = None
        """Where the load's interval clock began (``time.monotonic()``), once an interval said."""
        self._instants: dict[int, tuple[float, float | None]] = {}
        """Each fired action's start and end (``time.monotonic()``), by its index."""
        self._running: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="caplab-actions", daemon=True)
        self._thread.start()

    def stop(self, *, finish_running: bool = True) -> list[ActionOutcome]:
        """Ends the schedule; the outcomes, in order. Actions not yet due never run. One still
        running when the load ends is let finish within its own timeout, since a role change cut
        off halfway (a switchover killed while its old primary rejoins) leaves the system broken
        and its outcome unknown; with ``finish_running=False`` (Ctrl-C, a trial that failed) it is
        killed at once."""
        self._stop.set()
        self._due.put(-1)
        for outcome, trigger in zip(self.outcomes, self._triggers, strict=True):
            if trigger is not None and outcome.triggered is None:
                outcome.triggered = trigger.never()
        if not finish_running:
            with self._lock:
                if self._running is not None:
                    _kill_group(self._running)
        if self._thread is not None:
            self._thread.join(timeout=(max(self._timeouts, default=0.0) + 10) if finish_running else 10)
        with self._lock:
            if self._running is not None:  # outlived its own timeout's kill: killed again, and said so
                _kill_group(self._running)
                for outcome in self.outcomes:
                    if outcome.started_s is not None and outcome.ended_s is None:
                        outcome.timed_out = True
            origin = self._origin()
            for k, (started, ended) in self._instants.items():
                self.outcomes[k].started_s = started - origin
                self.outcomes[k].ended_s = None if ended is None else ended - origin
        return self.outcomes

    def _origin(self) -> float:
        """Where the load's clock began, as far as is known yet: ``start()`` until an interval said."""
        return self._t0 if self._load_t0 is None else self._load_t0

    def observe(self, interval: IntervalSnapshot, samples: Sequence[Figure] = ()) -> None:
        """Checks the conditions still waiting against one interval and the samples taken with it;
        each that holds falls due (once)."""
        began = time.monotonic() - interval.end_s
        self._load_t0 = began if self._load_t0 is None else min(self._load_t0, began)
        for k, (outcome, trigger) in enumerate(zip(self.outcomes, self._triggers, strict=True)):
            if trigger is None or outcome.triggered is not None or self._stop.is_set():
                continue
            why = trigger.check(interval, samples)
            if why is not None:
                outcome.triggered = why
                self._due.put(k)

    def watching(
        self, progress: Callable[[IntervalSnapshot, list[Any]], bool | None] | None
    ) -> Callable[[IntervalSnapshot, list[Any]], bool | None]:
        """A trial's progress callback that also feeds the conditions (``run_trial``'s)."""

        def watch(interval: IntervalSnapshot, samples: list[Any]) -> bool | None:
            self.observe(interval, samples)
            return progress(interval, samples) if progress is not None else None

        return watch

    def _run(self) -> None:
        timed = sorted((o.at_s, k) for k, o in enumerate(self.outcomes) if o.at_s is not None)
        waiting = sum(t is not None for t in self._triggers)
        while timed or waiting:
            due_in = self._origin() + timed[0][0] - time.monotonic() if timed else None
            if due_in is not None and due_in <= 0:
                k = timed.pop(0)[1]
            else:
                try:
                    # until the load's clock is known, look again as each interval may tell it
                    if due_in is not None and self._load_t0 is None:
                        due_in = min(due_in, REALIGN_S)
                    k = self._due.get(timeout=due_in)
                except queue.Empty:
                    continue
                waiting -= 1
            if k < 0 or self._stop.is_set():
                return
            self._fire(k, self._timeouts[k])

    def _fire(self, k: int, timeout: float) -> None:
        outcome = self.outcomes[k]
        with self._lock:
            if self._stop.is_set():
                return
            started, outcome.started_at = time.monotonic(), time.time()
            self._instants[k] = (started, None)
            outcome.started_s = started - self._origin()
            command: str | list[str] = outcome.command
            if self.prefix:
                command = [*self.prefix, "/bin/sh", "-c", outcome.command]
            process = subprocess.Popen(
                command,
                shell=not self.prefix,
                cwd=self.directory,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,  # its own process group: killed whole at its timeout
            )
            self._running = process
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, _ = process.communicate()
            outcome.timed_out = True
        ended = time.monotonic()
        self._instants[k] = (started, ended)
        outcome.ended_s = ended - self._origin()
        outcome.exit_code = process.returncode
        said = last_json_object(out or "")
        outcome.reported = reported_numbers(said)
        outcome.phases = ManagerPhases.from_report(said)
        outcome.output = scrub("\n".join((out or "").strip().splitlines()[-OUTPUT_LINES:]))
        with self._lock:
            self._running = None


def last_json_object(output: str) -> dict[str, Any]:
    """The last JSON object an action printed (over one or many lines, as ``json.dumps(…,
    indent=2)`` does); empty when it printed none."""
    lines = output.rstrip().splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if not lines[start].lstrip().startswith("{"):
            continue
        try:
            found = json.loads("\n".join(lines[start:]))
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return {}


def reported_numbers(said: str | dict[str, Any]) -> dict[str, float]:
    """The top-level numbers of the last JSON object an action printed (its output, or that object)."""
    found = last_json_object(said) if isinstance(said, str) else said
    return {k: float(v) for k, v in found.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _kill_group(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def recoveries(result: RunResult, outcomes: list[ActionOutcome]) -> list[dict[str, Any]]:
    """Each action with the load's recovery from it (``{"action": …, "load": …}``; no ``load`` for
    an action that never ran), read from the trial's interval series from its fault (``fault_s``:
    the instant it reported, else its start)."""
    series = [Interval(i.start_s, i.end_s, i.completed, i.errors, i.warmup) for i in result.intervals]
    return [
        {"action": o.as_dict()}
        | ({"load": recovery(series, o.fault_s).as_dict()} if o.fault_s is not None else {})
        for o in outcomes
    ]


def recovery_text(outcome: ActionOutcome, entry: dict[str, Any]) -> str:
    """The action and, when it ran, how the load came through it: one line."""
    load = entry.get("load")
    return outcome.describe() + (f"; the load {recovery_line(Recovery(**load))}" if load else "")
