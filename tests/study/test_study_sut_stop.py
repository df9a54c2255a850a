"""Stopping a cell's SUT waits for its whole process group: a child still shutting down would hold
the ports the next cell's SUT wants (msgbus's supervisor exits before its tiers have closed)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from caplab.spec import ReadySpec, SutSpec
from caplab.study.sut import Sut, SutFailed

# The child takes a second over SIGTERM and says when it has finished; the shell it belongs to exits
# at once.
SLOW_CHILD = (
    "python3 -c 'import signal,time; signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1), "
    'open("child.done","w").write("1"), exit(0))); '
    'open("child.pid","w").write(str(__import__("os").getpid())); time.sleep(60)\' & '
    "while [ ! -s child.pid ]; do sleep 0.05; done; echo ready; wait"
)


@pytest.mark.slow
def test_stop_returns_only_when_every_process_of_the_sut_has_gone(tmp_path: Path) -> None:
    sut = Sut(SutSpec(start=SLOW_CHILD), tmp_path)
    sut.start()
    deadline = time.monotonic() + 10
    while not (tmp_path / "child.pid").exists() or not (tmp_path / "child.pid").read_text():
        assert time.monotonic() < deadline, sut.tail()
        time.sleep(0.05)
    child = int((tmp_path / "child.pid").read_text())
    sut.stop()
    assert (tmp_path / "child.done").exists(), "stop returned before the child finished its shutdown"
    # Gone, or a zombie waiting for init to reap it (it holds nothing any more).
    try:
        state = Path(f"/proc/{child}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except FileNotFoundError:
        state = b"gone"
    assert state in (b"gone", b"Z")


def test_a_port_already_taken_before_the_start_fails_the_cell_without_starting(tmp_path: Path) -> None:
    """Otherwise the ready check would pass against the stranger and the cell would measure it."""
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        port = stranger.getsockname()[1]
        sut = Sut(SutSpec(start="touch started", ready=ReadySpec(port=port)), tmp_path)
        with pytest.raises(SutFailed, match=f"TCP 127.0.0.1:{port} already answers"):
            sut.start()
    assert sut.process is None and not (tmp_path / "started").exists()
    # Once the stranger has gone, the same SUT starts.
    sut.start()
    assert sut.process is not None
    sut.stop()


@pytest.mark.slow
def test_a_child_left_by_a_dead_main_process_is_asked_to_stop(tmp_path: Path) -> None:
    """The SUT's main process dies first (as the OOM killer ends a role): its child, still running,
    gets SIGTERM at the stop and finishes its shutdown, rather than a SIGKILL after the grace."""
    sut = Sut(SutSpec(start=SLOW_CHILD.replace("wait", "exit 3")), tmp_path)
    sut.start()
    assert sut.process is not None
    sut.process.wait(timeout=10)  # the shell has gone; its child lives on in its group
    child = int((tmp_path / "child.pid").read_text())
    assert Path(f"/proc/{child}").exists()
    sut.stop()
    assert (tmp_path / "child.done").exists(), "the child was killed, not asked to stop"
