"""One load agent: a plain class that runs the engine on its share of the plan, in whatever
process holds it (a Ray actor's worker, or the test's own process).

Before each run the driver calls `reset`, `identity` and `clock`, then `run`, and meanwhile
`progress` and perhaps `stop` from other threads (a Ray actor with several concurrent calls): the
engine releases the GIL while it runs, so these answer promptly. One agent serves every trial of a
search or a study: a new Ray actor is a new process that imports caplab, some 3 s a trial.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import caplab
from caplab import engine
from caplab.engine import IntervalSnapshot, Plan


@dataclass(frozen=True)
class AgentIdentity:
    """Where an agent runs and what it runs: versions must match the driver's."""

    name: str
    node: str
    pid: int
    caplab_version: str
    engine_version: str


@dataclass(frozen=True)
class AgentRun:
    """What one agent's run gave: the engine's result as JSON (``raw``), or why there is none;
    and how late its engine started against the agreed instant, on its own clock."""

    name: str
    raw: str | None
    failure: str | None
    start_late_s: float | None


class Agent:
    """Runs one share of a load when asked, keeps the interval snapshots for the driver to poll,
    and stops early when told."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._snapshots: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def reset(self) -> None:
        """Readies the agent for its next run: the last run's intervals, and a stop that ended
        it, are forgotten."""
        with self._lock:
            self._snapshots = []
        self._stopping.clear()

    def identity(self) -> AgentIdentity:
        return AgentIdentity(
            self.name, socket.gethostname(), os.getpid(), caplab.__version__, engine.ENGINE_VERSION
        )

    def clock(self) -> float:
        """This agent's wall clock, for the driver's offset estimate."""
        return time.time()

    def run(self, plan: Plan, start_at: float) -> AgentRun:
        """Waits until ``start_at`` (this agent's clock) and runs the plan. A plan the engine
        rejects, a target it cannot reach or a failed worker is a failure named in the answer,
        not an exception, so that it crosses any process boundary intact."""
        if self._stopping.wait(max(0.0, start_at - time.time())):
            return AgentRun(self.name, None, "stopped before the start", None)
        late_s = time.time() - start_at
        try:
            result = engine.run(plan, self._on_interval)
        except (engine.PlanError, engine.TargetUnreachable, engine.WorkerFailed) as e:
            return AgentRun(self.name, None, f"{type(e).__name__}: {e}", late_s)
        return AgentRun(self.name, json.dumps(result.raw), None, late_s)

    def progress(self, since: int) -> list[dict[str, Any]]:
        """The interval snapshots from index ``since`` on, as the engine reported them."""
        with self._lock:
            return self._snapshots[since:]

    def stop(self) -> None:
        """Ends the run at its next interval (or before it starts), keeping what was measured."""
        self._stopping.set()

    def _on_interval(self, snapshot: IntervalSnapshot) -> bool:
        with self._lock:
            self._snapshots.append(asdict(snapshot))
        return not self._stopping.is_set()
