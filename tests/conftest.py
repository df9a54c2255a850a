"""Fixtures: the built-in knownserver as a child process, in-process servers that record what they
receive (see servers.py), a closed port, the `caplab` command, and (support/pg_plugin.py) the
session's throwaway PostgreSQL, ``postgres_url``."""

from __future__ import annotations

import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caplab.systems.process import RunningServer, start_module
from support.servers import FramedServer, Framing, KnownServer, RecordingHttpServer, Reply, ResponseStyle

pytest_plugins = ["support.pg_plugin"]

# --- knownserver (child process) ------------------------------------------------------------------


@pytest.fixture
def known_server() -> Iterator[KnownServer]:
    """Starts ``python -m caplab.systems.knownserver --cpu-us 0 ARGS…``; stops every one at teardown."""
    started: list[RunningServer] = []

    def start(*args: str) -> RunningServer:
        server = start_module("caplab.systems.knownserver", "--cpu-us", "0", *args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def plain_server() -> Iterator[RunningServer]:
    """One HTTP knownserver with no per-request cost, shared by tests that only need replies."""
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as server:
        yield server


@pytest.fixture
def framed_server() -> Iterator[Callable[..., FramedServer]]:
    """Factory for in-process framed TCP servers; all are closed at teardown."""
    servers: list[FramedServer] = []

    def start(framing: Framing = "line", reply: Reply = "echo") -> FramedServer:
        server = FramedServer(framing, reply)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def http_recorder() -> Iterator[Callable[[ResponseStyle], RecordingHttpServer]]:
    """Factory for in-process HTTP servers that record every request and answer in one style."""
    servers: list[RecordingHttpServer] = []

    def start(style: ResponseStyle = "length") -> RecordingHttpServer:
        server = RecordingHttpServer(style)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# --- odds and ends -----------------------------------------------------------------------------------


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening (bound once to learn a free number, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture(scope="session")
def caplab_cmd() -> list[str]:
    """The installed `caplab` entry point (``python -m caplab.cli`` has no ``__main__`` guard)."""
    beside = Path(sys.executable).parent / "caplab"
    found = str(beside) if beside.exists() else shutil.which("caplab")
    if found is None:
        pytest.fail("the caplab entry point is not installed (run `make dev`)")
    return [found]
