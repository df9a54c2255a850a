"""Running `caplab find-capacity` against a knownserver for the integration tests: the server and
the generator pinned to different cores where possible, the server's own CPU per request measured
alongside (its throughput ceiling on one thread)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from caplab.systems.process import RunningServer, start_module
from support.servers import served_requests

CAPLAB = Path(sys.executable).parent / "caplab"
SEARCH_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class CpuSplit:
    """``taskset`` prefixes: one core for the server, the rest for caplab (empty when this machine
    cannot be split: fewer than two usable CPUs or no taskset)."""

    server: tuple[str, ...]
    generator: tuple[str, ...]


def cpu_split() -> CpuSplit:
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    taskset = shutil.which("taskset")
    if len(cpus) < 2 or taskset is None:
        return CpuSplit((), ())
    rest = ",".join(str(c) for c in cpus[:-1])
    return CpuSplit((taskset, "-c", str(cpus[-1])), (taskset, "-c", rest))


@dataclass(frozen=True)
class SearchRun:
    """One `caplab find-capacity --json` run and what the server did meanwhile."""

    doc: dict[str, Any]
    returncode: int
    stderr: str
    elapsed_s: float
    cpu_ms_per_request: float
    """The server's CPU per request over the whole search, from its own counters."""

    @property
    def ceiling_rps(self) -> float:
        """One thread's throughput bound: 1 / CPU per request."""
        return 1000.0 / self.cpu_ms_per_request


def find_capacity(server_args: list[str], caplab_args: list[str], with_pid: bool = True) -> SearchRun:
    split = cpu_split()
    server: RunningServer = start_module("caplab.systems.knownserver", *server_args, prefix=split.server)
    with server:
        proc = psutil.Process(server.process.pid)
        sut = ["--sut-pid", str(server.process.pid)] if with_pid else []
        cmd = [
            *split.generator,
            str(CAPLAB),
            "find-capacity",
            f"http://{server.address}/",
            *sut,
            *caplab_args,
        ]
        before, served_before = proc.cpu_times(), served_requests(server)
        began = time.monotonic()
        p = subprocess.run(
            [*cmd, "--json"], capture_output=True, text=True, timeout=SEARCH_TIMEOUT_S, check=False
        )
        elapsed = time.monotonic() - began
        after, served = proc.cpu_times(), served_requests(server) - served_before
    cpu_s = (after.user + after.system) - (before.user + before.system)
    assert p.stdout.strip(), f"no JSON from {' '.join(cmd)}: {p.stderr[-2000:]}"
    doc: dict[str, Any] = json.loads(p.stdout)
    return SearchRun(doc, p.returncode, p.stderr, elapsed, 1000.0 * cpu_s / max(served, 1))
