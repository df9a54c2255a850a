"""Fixtures for the collector tests: child processes in their own process groups (so a test never
leaves a CPU burner behind) and a free loopback port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts ``python -c CODE ARGS…`` in its own process group (stdout piped); kills every group
    at teardown, grandchildren included."""
    started: list[subprocess.Popen[str]] = []

    def start(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
        p = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(p)
        return p

    yield start
    for p in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=5)
        if p.stdout is not None:
            p.stdout.close()
        if p.stdin is not None:
            p.stdin.close()


@pytest.fixture
def free_port() -> int:
    """A loopback port nothing listens on (bound once to learn a free number, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
