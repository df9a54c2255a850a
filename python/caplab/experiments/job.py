"""The job experiment: batch work timed phase by phase (the MIIS paper's staging and
synchronisation of N objects), instead of requests at a rate.

Before each repeat the job's ``reset`` and ``prepare`` commands run, untimed (the paper emptied the
store before every run). Then each phase's command runs while the cell's collectors sample every
``interval`` on the phase's own clock — the same resource figures as a load trial, so the limit
analysis names what bounded the phase (a volume, a role's CPU, or nothing: software). A phase's
rate is its items over its wall time — a number the study gives, or how much the system's own
counter (``items: {counter: SERIES}``, read from ``sut.metrics``) rose over the phase; repeats give
that rate a t-interval. A phase that exits
non-zero fails the cell with its last lines; one past its timeout is killed and reported so.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caplab.analysis.limit import Limit, find_limit
from caplab.analysis.replicates import t_interval
from caplab.collect.base import ResourceSample
from caplab.collect.prometheus import scrape
from caplab.collect.summary import cell_resources, summarize
from caplab.experiments.base import CellContext, Interrupted, SamplerSet, TrialRecord
from caplab.json_types import JsonDict
from caplab.spec import CounterItems, JobSpec, PhaseSpec
from caplab.units import scrub

OUTPUT_LINES = 5


class PhaseFailed(Exception):
    """A phase (or the job's reset/prepare) that exited non-zero or ran past its timeout."""


@dataclass
class PhaseRun:
    name: str
    repeat: int
    wall_s: float
    items: int | None
    status: str
    """``complete``, ``failed`` (non-zero exit) or ``timed out``."""
    exit_code: int | None
    output: str
    samples: list[ResourceSample] = field(default_factory=list, repr=False)

    @property
    def items_per_s(self) -> float | None:
        return self.items / self.wall_s if self.items is not None and self.wall_s > 0 else None


def run_command(
    command: str,
    cwd: Path,
    env: dict[str, str] | None,
    timeout_s: float,
    tick: float,
    on_tick: Any = None,
    prefix: list[str] | None = None,
) -> tuple[int | None, bool, str, float]:
    """Runs a shell command to its end or its timeout, calling ``on_tick(elapsed)`` every ``tick``
    seconds meanwhile; ``(exit code, timed out, last output lines, wall seconds)``.

    The wall time ends when the command exits, as ``_Reaper`` sees it: ``Popen.wait(timeout)``
    polls, sleeping up to 50 ms between looks, which added 5-30 ms to a phase's wall time (2 % of
    a 1.5 s phase) and as much to every phase's end."""
    start = time.monotonic()
    process = subprocess.Popen(
        [*prefix, "/bin/sh", "-c", command] if prefix else command,
        shell=not prefix,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    tail: deque[str] = deque(maxlen=OUTPUT_LINES)
    assert process.stdout is not None
    stream = process.stdout
    reader = threading.Thread(target=lambda: tail.extend(line.rstrip() for line in stream), daemon=True)
    reader.start()
    reaper = _Reaper(process)
    timed_out = False
    try:
        while not reaper.exited.is_set():
            elapsed = time.monotonic() - start
            if elapsed >= timeout_s:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                break
            if not reaper.exited.wait(min(tick, timeout_s - elapsed)) and on_tick is not None:
                on_tick(time.monotonic() - start)
    except BaseException:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    process.wait()
    wall = reaper.end(default=time.monotonic()) - start
    reader.join(timeout=5)
    return process.returncode, timed_out, scrub("\n".join(tail)), wall


class _Reaper:
    """Waits for a process in a thread of its own (a blocking ``waitpid``, no polling): ``exited``
    is set, and the time noted, the moment it exits."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.exited = threading.Event()
        self._ended: float | None = None
        self._process = process
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        self._process.wait()
        self._ended = time.monotonic()
        self.exited.set()

    def end(self, default: float) -> float:
        """When the process exited (``default`` if the reaper has not seen it within a second:
        another thread reaped it first)."""
        self.exited.wait(1.0)
        return self._ended if self._ended is not None else default


class JobExperiment:
    """Runs the job's phases ``repeat`` times; returns no load trials (its figures go to the cell's
    metrics as ``job``)."""

    def __init__(
        self,
        job: JobSpec,
        directory: Path,
        env: dict[str, str] | None,
        roles: list[str],
        prefix: list[str] | None = None,
        metrics_url: str | None = None,
    ) -> None:
        self.job = job
        self.metrics_url = metrics_url
        """Where the system's counters are read, for phases that count items by one."""
        self.prefix = prefix or []
        """The job role's launch prefix: its commands run on its profile from their first instruction."""
        self.directory = directory
        self.env = env
        self.roles = roles

    def run(self, ctx: CellContext) -> list[TrialRecord]:
        runs: list[PhaseRun] = []
        try:
            for repeat in range(self.job.repeat):
                for step, command in (("reset", self.job.reset), ("prepare", self.job.prepare)):
                    if command:
                        self._untimed(step, command)
                for phase in self.job.phases:
                    ctx.progress.note(f"repeat {repeat + 1} of {self.job.repeat}: phase {phase.name}")
                    done = self._phase(phase, repeat, ctx.collectors)
                    runs.append(done)
                    ctx.progress.note(phase_line(done))
                    if done.status != "complete":
                        raise PhaseFailed(failure(done, phase))
        finally:
            ctx.summary["job"] = job_metrics(self.job, runs, self.roles).to_json()
        return []

    def _untimed(self, step: str, command: str) -> None:
        code, timed_out, output, _ = run_command(
            command, self.directory, self.env, 3600.0, 1.0, prefix=self.prefix
        )
        if code != 0 or timed_out:
            last = f": {output.splitlines()[-1]}" if output else ""
            raise PhaseFailed(f"job {step} {'timed out' if timed_out else f'exited {code}'}{last}")

    def _phase(self, phase: PhaseSpec, repeat: int, collectors: SamplerSet) -> PhaseRun:
        samples: list[ResourceSample] = []
        counter = phase.items.counter if isinstance(phase.items, CounterItems) else None
        before = self._count(phase, counter) if counter else 0.0
        collectors.start()
        try:
            code, timed_out, output, wall = run_command(
                phase.run,
                self.directory,
                self.env,
                phase.timeout,
                self.job.interval,
                lambda elapsed: samples.extend(collectors.sample(elapsed)),
                self.prefix,
            )
            samples.extend(collectors.sample(wall))
        except KeyboardInterrupt:
            raise Interrupted() from None
        finally:
            collectors.stop()
        status = "timed out" if timed_out else "complete" if code == 0 else "failed"
        items = phase.items if isinstance(phase.items, int) else None
        if counter and status == "complete":
            items = round(self._count(phase, counter) - before)
        return PhaseRun(phase.name, repeat, wall, items, status, code, output, samples)

    def _count(self, phase: PhaseSpec, counter: str) -> float:
        """The counter's value now (a missing series or endpoint fails the phase, saying so)."""
        assert self.metrics_url is not None  # the study file's check: a counter needs sut.metrics
        try:
            value = scrape(self.metrics_url).get(counter)
        except (OSError, ValueError) as e:
            raise PhaseFailed(f"phase {phase.name}: items: {e}") from e
        if value is None:
            raise PhaseFailed(f"phase {phase.name}: items: {self.metrics_url} has no series {counter}")
        return value


def failure(run: PhaseRun, phase: PhaseSpec) -> str:
    """Why a phase failed the cell: its exit or its timeout, and its last line of output."""
    how = f"exited {run.exit_code}" if run.status == "failed" else f"timed out after {phase.timeout:g}s"
    said = f": {run.output.splitlines()[-1]}" if run.output else ""
    return f"phase {run.name} {how}{said}"


def phase_line(run: PhaseRun) -> str:
    rate = f", {run.items_per_s:,.1f} items/s" if run.items_per_s is not None else ""
    return f"phase {run.name}: {run.status} in {run.wall_s:.2f}s{rate}"


@dataclass(frozen=True)
class PhaseFigures:
    """One phase over the job's repeats: its items/s mean with the t-interval over repeats, each
    run, the resources in its windows and the limit at that rate."""

    items: int | dict[str, str] | None
    items_per_s: float | None
    ci95: tuple[float, float] | None
    wall_s: float | None
    runs: tuple[PhaseRun, ...]
    resources: dict[str, dict[str, float]]
    limit: Limit | None

    def to_json(self) -> JsonDict:
        return {
            "items": self.items,
            "items_per_s": self.items_per_s,
            "ci95": list(self.ci95) if self.ci95 else None,
            "wall_s": self.wall_s,
            "runs": [_run_json(r) for r in self.runs],
            "resources": self.resources,
            "limit": self.limit,
        }


def _run_json(r: PhaseRun) -> JsonDict:
    return {
        "repeat": r.repeat,
        "wall_s": r.wall_s,
        "items": r.items,
        "items_per_s": r.items_per_s,
        "status": r.status,
        "exit_code": r.exit_code,
        "output": r.output,
    }


@dataclass(frozen=True)
class JobOutcome:
    """What a job cell measured (its summary's ``job``): each phase's figures, and the resources
    over every phase (which the recorder moves to the cell's resources)."""

    phases: dict[str, PhaseFigures]
    repeat: int
    resources: dict[str, dict[str, float]]

    def to_json(self) -> JsonDict:
        phases = {name: figures.to_json() for name, figures in self.phases.items()}
        return {"phases": phases, "repeat": self.repeat, "resources": self.resources}


def job_metrics(job: JobSpec, runs: list[PhaseRun], roles: list[str]) -> JobOutcome:
    """Per phase: each run, the items/s mean with its t-interval over repeats, the resources in
    its window and the limit at that rate."""
    phases = {p.name: _phase_figures(p, [r for r in runs if r.name == p.name], roles) for p in job.phases}
    every = [s for r in runs for s in r.samples]
    return JobOutcome(phases, job.repeat, cell_resources(every) if every else {})


def _phase_figures(phase: PhaseSpec, mine: list[PhaseRun], roles: list[str]) -> PhaseFigures:
    rates = [r.items_per_s for r in mine if r.status == "complete" and r.items_per_s is not None]
    samples = [s for r in mine for s in r.samples]
    mean = statistics.fmean(rates) if rates else None
    estimate = t_interval(rates) if len(rates) >= 2 else None
    scopes = summarize(samples) if samples else {}
    return PhaseFigures(
        items={"counter": phase.items.counter} if isinstance(phase.items, CounterItems) else phase.items,
        items_per_s=mean,
        ci95=(estimate.low, estimate.high) if estimate else None,
        wall_s=statistics.fmean(r.wall_s for r in mine) if mine else None,
        runs=tuple(mine),
        resources=cell_resources(samples) if samples else {},
        limit=find_limit(mean, scopes, roles) if mean and scopes else None,
    )
