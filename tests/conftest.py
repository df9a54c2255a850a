"""Fixtures: the built-in knownserver as a child process, in-process servers that record what they
receive (see servers.py), a closed port, the `caplab` command, and (support/pg_plugin.py) the
session's throwaway PostgreSQL, ``postgres_url``. At collection, the marks that let the suite run on
two pytest-xdist workers (support/parallel.py says which tests get them, and why)."""

from __future__ import annotations

import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from caplab.systems.process import RunningServer, start_module
from support import parallel
from support.mail import missing_mail_packages
from support.require import MAIL, require
from support.servers import FramedServer, Framing, KnownServer, RecordingHttpServer, Reply, ResponseStyle

pytest_plugins = ["support.pg_plugin"]

# --- running on two workers -----------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by mark and before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``xdist_group`` on every test that binds a fixed port (one group per set of tests that share
    one, so ``--dist loadgroup`` runs them one after another on one worker), and ``alone`` on the
    tests that measure the machine (the parallel pass leaves them to a serial one): see
    support/parallel.py."""
    for item in items:
        key = parallel.key_of(item.path, item.nodeid)
        if key is None:
            continue
        group = parallel.group_of(key)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(name=group))
        if parallel.alone_because(key) is not None:
            item.add_marker(pytest.mark.alone)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: never called without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> Any:
    """For ``--dist loadgroup``, a scheduler that reads the groups from support/parallel.py's table
    by node id: the ``xdist_group`` marks alone do not reach xdist's controller under pytest 9.2
    (see support/parallel.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return parallel.scheduler(config, log)


# --- knownserver (child process) ------------------------------------------------------------------


@pytest.fixture
def mail_packages() -> None:
    """Postfix, Dovecot and root for the mail system's tests: skipped without them, or failed
    under ``CAPLAB_REQUIRE_MAIL=1`` (CI), so CI never passes with them silently left out."""
    require(MAIL, missing_mail_packages())


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
