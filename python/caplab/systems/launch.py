"""Launching a multi-process system's supervisor from Python and waiting until it is ready.

The supervisor prints one ``KEY VALUE`` line to stdout per address once it is ready (``listening
127.0.0.1:7400``, ``metrics http://…``); ``start`` reads them from a thread, keeps the last lines
of stderr for error messages, and gives up with that stderr if the process exits or the time runs
out first. Secrets travel in ``env``, never on the command line.
"""

from __future__ import annotations

import collections
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import psutil


@dataclass
class Launched:
    """A supervisor that printed its ready lines: the process, the lines as ``{KEY: VALUE}``, and
    the tail of its stderr (still being filled by a daemon thread)."""

    process: subprocess.Popen[str]
    ready: dict[str, str]
    stderr: collections.deque[str]


def start(
    name: str,
    cmd: list[str],
    env: dict[str, str],
    ready_lines: int,
    timeout_s: float,
    stderr_lines: int,
) -> Launched:
    """Starts ``cmd`` and returns once it printed ``ready_lines`` lines; RuntimeError ``name did
    not start: <stderr>`` if it exits or ``timeout_s`` passes first."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_drain, args=(proc.stderr, stderr.append), daemon=True).start()
    threading.Thread(target=_drain, args=(proc.stdout, lines.put), daemon=True).start()
    ready: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while len(ready) < ready_lines:
        try:
            line = lines.get(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
        except queue.Empty:
            if proc.poll() is None and time.monotonic() < deadline:
                continue
            proc.kill()
            proc.wait()
            time.sleep(0.1)  # let the drain thread take the last stderr lines
            raise RuntimeError(f"{name} did not start: {''.join(stderr).strip()[-2000:]}") from None
        key, _, value = line.strip().partition(" ")
        ready[key] = value
    return Launched(proc, ready, stderr)


def wait_until(
    name: str,
    process: subprocess.Popen[str],
    scrape: Callable[[], dict[str, float]],
    done: Callable[[dict[str, float]], bool],
    timeout_s: float,
    explain: Callable[[dict[str, float]], str],
) -> dict[str, float]:
    """Scrapes a launched system's metrics every 50 ms until ``done(samples)``; TimeoutError
    ``name did not get there within … s: explain(samples)`` once ``timeout_s`` passes or the process
    has exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        samples = scrape()
        if done(samples):
            return samples
        if time.monotonic() > deadline or process.poll() is not None:
            raise TimeoutError(f"{name} did not get there within {timeout_s} s: {explain(samples)}")
        time.sleep(0.05)


def stop(process: subprocess.Popen[str], timeout_s: float) -> int:
    """SIGTERM (a supervisor then stops its children in its own order), SIGKILL if it has not
    exited within ``timeout_s``; returns its exit code."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def child_pids(process: subprocess.Popen[str], needle: str, recursive: bool = False) -> list[int]:
    """Live pids among ``process``'s children whose command line (plus a trailing space) holds
    ``needle``: how caplab's role matcher finds a system's processes."""
    found = []
    for p in psutil.Process(process.pid).children(recursive=recursive):
        try:
            if needle in " ".join(p.cmdline()) + " " and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except psutil.Error:
            continue
    return sorted(found)


def stop_on_signals(detach: bool) -> threading.Event:
    """For a system run in the foreground until told to stop: an event SIGTERM or SIGINT sets
    (detached, no handler is installed and the event is never set)."""
    stop = threading.Event()
    if not detach:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda _signum, _frame: stop.set())
    return stop


def ignore_signals() -> None:
    """While a system's servers are being stopped: a second Ctrl-C must not cut that short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def process_tree(pid: int | None) -> list[int]:
    """``pid`` and every process it started, children sorted (a server's master and its workers);
    empty when there is no such process."""
    if pid is None:
        return []
    try:
        return [pid, *sorted(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return []


def _drain(stream: IO[str], into: Callable[[str], None]) -> None:
    for line in stream:
        into(line)
