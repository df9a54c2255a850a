"""What the live page shows, as data: the matrix with each cell's state, the trial running (its
intervals: throughput, latency percentiles, errors), each role's latest CPU and memory, the search's
steps in the current cell, the last notes, and at the end the outcome and the report.

Each change returns the events that tell a connected page about it; ``snapshot`` is the whole
state, for a page that connects (or falls behind) mid-run. Plain data, no I/O: the server
(`caplab.live.server`) sends it, the observer (`caplab.live.observer`) feeds it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, RunResult
from caplab.store.urls import scrub_json

INTERVALS_KEPT = 600
"""A trial's intervals the page can draw (10 minutes at the default 1 s interval); older ones go."""
NOTES_KEPT = 12

Event = tuple[str, dict[str, Any]]
"""An SSE event: its name and its JSON payload."""

MEMORY = ("rss_mb", "mem_used_mb")
"""A scope's memory: a process role's resident set, or the host's used memory."""


@dataclass
class Trial:
    number: int
    label: str
    intervals: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=INTERVALS_KEPT))
    running: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "label": self.label, "intervals": list(self.intervals)}


@dataclass
class LiveState:
    """The study (or the one load) as it runs."""

    kind: str = "study"
    title: str = ""
    status: str = "starting"
    """``starting``, ``running``, then how it ended: ``complete``, ``failed`` or ``interrupted``."""
    cells: list[dict[str, Any]] = field(default_factory=list)
    current: int | None = None
    trial: Trial | None = None
    trials: int = 0
    resources: dict[str, dict[str, float]] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    notes: deque[str] = field(default_factory=lambda: deque(maxlen=NOTES_KEPT))
    result: dict[str, Any] | None = None
    report: str | None = None

    def snapshot(self) -> dict[str, Any]:
        """Everything the page shows, passwords masked."""
        whole: dict[str, Any] = scrub_json(
            {
                "kind": self.kind,
                "title": self.title,
                "status": self.status,
                "cells": self.cells,
                "current": self.current,
                "trial": self.trial.to_json() if self.trial else None,
                "resources": self.resources,
                "steps": self.steps,
                "notes": list(self.notes),
                "result": self.result,
                "report": self.report,
            }
        )
        return whole

    def _whole(self) -> list[Event]:
        return [("snapshot", self.snapshot())]

    def begin(self, kind: str, title: str, cells: list[tuple[str, str]]) -> list[Event]:
        """The matrix: each cell's label and state (``pending``, or ``complete`` when resumed)."""
        self.kind, self.title, self.status = kind, title, "running"
        self.cells = [{"index": i, "label": label, "state": s} for i, (label, s) in enumerate(cells)]
        return self._whole()

    def cell_started(self, index: int) -> list[Event]:
        self.current, self.steps, self.trial, self.resources = index, [], None, {}
        self.cells[index]["state"] = "running"
        return self._whole()

    def cell_finished(self, index: int, state: str, figures: dict[str, Any]) -> list[Event]:
        """A cell's end: ``complete`` (or ``skipped`` when a resumed run had it) or ``failed``, and
        its figures (throughput, p99, errors, a capacity, a failure's reason)."""
        self.cells[index] |= {"state": state, **figures}
        if self.trial is not None:
            self.trial.running = False
        return self._whole()

    def trial_started(self, label: str) -> list[Event]:
        self.trials += 1
        self.trial = Trial(self.trials, label)
        return [("trial", {"number": self.trials, "label": label})]

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> list[Event]:
        """One interval of the running trial; a search's trials start with their first interval
        (nothing announces them), so a trial already ended or a clock gone back opens a new one."""
        events: list[Event] = []
        last = self.trial.intervals[-1] if self.trial and self.trial.intervals else None
        if self.trial is None or not self.trial.running or (last is not None and s.end_s <= last["t"]):
            events += self.trial_started(f"search trial {len(self.steps) + 1}" if self.steps else "trial")
        assert self.trial is not None
        point = interval_json(s)
        self.trial.intervals.append(point)
        for sample in samples:
            metric = "cpu" if sample.metric == "cpu_percent" else "mem" if sample.metric in MEMORY else None
            if metric is not None:
                self.resources.setdefault(sample.scope, {})[metric] = sample.value
        payload = {"trial": self.trial.number, "interval": point, "resources": self.resources}
        return [*events, ("interval", scrub_json(payload))]

    def trial_finished(self, kind: str, result: RunResult) -> list[Event]:
        """A trial's end; a search's trial becomes a step of the search."""
        if self.trial is not None:
            self.trial.running = False
        if not kind.startswith("search:"):
            return []
        step = {
            "n": len(self.steps) + 1,
            "phase": kind.removeprefix("search:"),
            "load": result.users if result.users is not None else result.offered_rate,
            "unit": "users" if result.users is not None else "req/s",
            **result_figures(result),
        }
        self.steps.append(step)
        return [("step", scrub_json(step))]

    def note(self, text: str) -> list[Event]:
        self.notes.append(text)
        return [("note", scrub_json({"text": text}))]

    def finish(
        self, status: str, result: dict[str, Any] | None = None, report: str | None = None
    ) -> list[Event]:
        """The end of the run: the finished state, the load's figures, and the report where one
        was written (each finished cell then links to its figures there). The page stops listening."""
        self.status = status
        self.result = result if result is not None else self.result
        if self.trial is not None:
            self.trial.running = False
        if report is not None:
            self.report = report
            for cell in self.cells:
                if cell["state"] in ("complete", "failed", "skipped"):
                    cell["link"] = f"{report}#results"
        return [("done", self.snapshot())]


def interval_json(s: IntervalSnapshot) -> dict[str, Any]:
    lat = s.latency_ms
    return {
        "t": s.end_s,
        "warmup": s.warmup,
        "throughput": s.throughput,
        "sent": s.sent,
        "completed": s.completed,
        "errors": s.errors,
        "dropped": s.dropped,
        "in_flight": s.in_flight,
        "p50": lat.p50,
        "p90": lat.p90,
        "p99": lat.p99,
        "max": lat.max,
    }


def result_figures(r: RunResult) -> dict[str, Any]:
    """A trial's headline figures over its measured window."""
    return {
        "throughput": r.throughput,
        "p50": r.latency_ms.p50,
        "p99": r.latency_ms.p99,
        "max": r.latency_ms.max,
        "errors": r.errors,
        "completed": r.completed,
        "duration_s": r.duration_s,
    }
