"""The supervisor: its tiers are told apart by ROLES, it stops them all on SIGTERM, a SIGKILLed
supervisor leaves no orphans, a dead store stops everything, and start-up failures say why."""

from __future__ import annotations

import os
import signal
import socket
import time

import psutil
import pytest
import yaml

from caplab.studies import study_folder
from caplab.systems.msgbus import ROLES, RunningMsgbus
from caplab.systems.process import start_module
from support.msgbus_client import Start


def tier_processes(bus: RunningMsgbus) -> list[psutil.Process]:
    return psutil.Process(bus.process.pid).children(recursive=True)


def wait_gone(procs: list[psutil.Process], timeout_s: float = 10) -> list[psutil.Process]:
    """The processes still alive (not zombies) after up to ``timeout_s``."""
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_roles_match_exactly_their_own_tier(start_msgbus: Start) -> None:
    bus = start_msgbus(2, 3)
    counts = {role: len(bus.tier_pids(role)) for role in ROLES}
    assert counts == {"receive": 1, "processing": 2, "messagebox": 3, "sink": 1}
    supervisor = " ".join(psutil.Process(bus.process.pid).cmdline()) + " "
    assert not any(needle in supervisor for needle in ROLES.values())
    assert len(tier_processes(bus)) == 7, "every process belongs to exactly one role"


@pytest.mark.parametrize("study", ["study.yaml", "quick.yaml"])
def test_the_scaleout_study_finds_the_tiers_by_roles(study: str) -> None:
    """The study names its roles' processes by hand; a tier module renamed must be renamed there."""
    spec = yaml.safe_load((study_folder("biztalk-scaleout") / study).read_text())
    assert {role: r["match"] for role, r in spec["sut"]["roles"].items()} == ROLES


def test_sigterm_stops_every_tier(start_msgbus: Start) -> None:
    bus = start_msgbus(2, 2)
    children = tier_processes(bus)
    assert len(children) == 6
    assert bus.stop() == 0
    assert wait_gone(children) == []


@pytest.mark.slow
def test_a_sigkilled_supervisor_leaves_no_orphans(start_msgbus: Start) -> None:
    bus = start_msgbus(2, 2)
    children = tier_processes(bus)
    bus.process.kill()
    bus.process.wait()
    assert wait_gone(children) == []


def test_a_dead_store_stops_everything(start_msgbus: Start) -> None:
    bus = start_msgbus(1, 2)
    children = tier_processes(bus)
    os.kill(bus.tier_pids("messagebox")[1], signal.SIGKILL)
    assert bus.process.wait(timeout=20) == 1
    assert wait_gone(children) == []
    deadline = time.monotonic() + 5  # the stderr drain thread reads the last lines
    while "stopping msgbus" not in bus.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "store 1 (pid" in bus.stderr_tail() and "stopping msgbus" in bus.stderr_tail()


def test_a_port_in_use_is_named(start_msgbus: Start) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=rf"127\.0\.0\.1:{port}: the port is in use"):
            start_msgbus(1, 1, sink_port=port)


def test_an_unreachable_postgresql_is_named_without_its_password(start_msgbus: Start) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(RuntimeError) as failure:
        start_msgbus(1, 1, store_url=f"postgresql://caplab:s3cret-pw@127.0.0.1:{closed}/nothing")
    message = str(failure.value)
    assert "cannot connect to postgresql://caplab:***@127.0.0.1" in message
    assert "s3cret-pw" not in message


def test_the_cli_prints_listening_first_for_start_module() -> None:
    args = ["--hosts", "1", "--stores", "1", "--port", "0", "--http-port", "0", "--metrics-port", "0"]
    with start_module("caplab.systems.msgbus", *args, "--sink-port", "0", "--store-port", "0") as server:
        assert server.host == "127.0.0.1" and server.port > 0
        assert server.process.stdout is not None
        rest = [server.process.stdout.readline().split()[0] for _ in range(5)]
        assert rest == ["http", "metrics", "sink", "stores", "hosts"]
        with socket.create_connection((server.host, server.port), timeout=5):
            pass
