"""The system under test's lifecycle for one cell: start it, wait until it is ready, watch that it
stays up, stop it — keeping its last output lines, which are what explain a failure."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from caplab.spec import ReadySpec, SutSpec

TAIL_LINES = 20
STOP_GRACE_S = 10.0


class SutFailed(Exception):
    """The SUT did not start, never became ready, or died; the message carries its last output."""


def sut_environment() -> dict[str, str]:
    """The SUT's environment: caplab's own, with the directory of the running interpreter first on
    PATH, so a study's ``caplab systems start …`` or ``python -m …`` runs from this very install
    even when its virtualenv is not activated."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


class Sut:
    def __init__(
        self,
        spec: SutSpec,
        cwd: Path,
        launch_prefix: list[str] | None = None,
        launched_role: str | None = None,
    ) -> None:
        self.spec = spec
        self.cwd = cwd
        self.launch_prefix = list(launch_prefix or [])
        """An argv the start command runs under (a hardware profile's cgroups and namespace)."""
        self.launched_role = launched_role if self.launch_prefix else None
        """The role whose profile the start command (and all it starts) runs on, if one does."""
        self.process: subprocess.Popen[str] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> None:
        """Runs the start command (in its own session, so stopping it stops its children too)."""
        if not self.spec.start:
            return
        self._refuse_occupied()
        command: str | list[str] = self.spec.start
        if self.launch_prefix:
            command = [*self.launch_prefix, "/bin/sh", "-c", self.spec.start]
        try:
            self.process = subprocess.Popen(
                command,
                shell=not self.launch_prefix,
                cwd=self.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
                env=sut_environment(),
            )
        except OSError as e:
            raise SutFailed(f"cannot start {self.spec.start!r}: {e.strerror}") from e
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()

    def _refuse_occupied(self) -> None:
        """A readiness URL or port that answers before the SUT has started belongs to some other
        server (often one left over from an earlier run): measuring it would attribute its
        numbers, and another process's resource use, to this cell."""
        ready = self.spec.ready
        if ready is not None and ready.command is None and _check(ready, self.cwd):
            raise SutFailed(
                f"{_describe(ready)} already answers before the SUT was started: another server "
                "holds it (one left from an earlier run?); stop it and run again"
            )

    def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self._tail.append(line.rstrip("\n"))

    def tail(self) -> str:
        """The SUT's last output lines, for error messages."""
        if self._reader is not None and self.process is not None and self.process.poll() is not None:
            self._reader.join(timeout=1)
        lines = list(self._tail)
        return "\n".join(f"  | {line}" for line in lines) if lines else "  (no output)"

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    def exit_message(self, when: str) -> str:
        code = self.process.poll() if self.process else None
        return f"the SUT exited with code {code} {when}; its last output:\n{self.tail()}"

    def wait_ready(self) -> None:
        """Polls the readiness check until it passes; fails early if the SUT exits."""
        ready = self.spec.ready
        if ready is None:
            return
        deadline = time.monotonic() + ready.timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise SutFailed(self.exit_message("before it was ready"))
            if _check(ready, self.cwd):
                return
            time.sleep(0.1)
        raise SutFailed(
            f"the SUT was not ready within {ready.timeout:g}s ({_describe(ready)}); last output:\n"
            f"{self.tail()}"
        )

    def restart(self) -> None:
        """Stops the system and starts it afresh, ready: after a trial it did not survive."""
        self.stop()
        self._tail.clear()
        self.start()
        self.wait_ready()

    def stop(self) -> None:
        """The stop command if there is one, then SIGTERM to the process group, SIGKILL after a grace."""
        died_first = self.process is not None and self.process.poll() is not None
        if self.spec.stop:
            subprocess.run(
                self.spec.stop,
                shell=True,
                cwd=self.cwd,
                timeout=60,
                capture_output=True,
                check=False,
                env=sut_environment(),  # as the start command's: `python -m …` is this install's
                start_new_session=True,  # a terminal's Ctrl-C goes to caplab's group, not to it
            )
        if self.process is None:
            return
        group = self.process.pid
        if self.process.poll() is None:
            _signal_group(group, signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(group, signal.SIGKILL)
                self.process.wait()
        elif died_first and _live_members(group):
            # The main process had died before the stop (the OOM killer, a crash) and took no one
            # with it: the rest of its group was never asked to stop, and would only be killed
            # after the whole grace (10 s of every cell whose main process died).
            _signal_group(group, signal.SIGTERM)
        # The command may be done while processes it started are still shutting down, holding
        # the ports the next cell's SUT will want: the cell ends when the whole group has gone.
        if not _group_gone(group, STOP_GRACE_S):
            _signal_group(group, signal.SIGKILL)
            _group_gone(group, STOP_GRACE_S)


def _group_gone(group: int, timeout_s: float) -> bool:
    """Waits until no live process is left in the process group; False if some remain at the end.
    Zombies do not count: they hold no ports, and an orphan's is reaped by init in its own time."""
    deadline = time.monotonic() + timeout_s
    while _live_members(group):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _live_members(group: int) -> bool:
    """Whether any process of the group is alive and not a zombie (from /proc/PID/stat)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone while we looked
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _describe(ready: ReadySpec) -> str:
    if ready.url:
        return f"GET {ready.url}"
    if ready.port:
        return f"TCP {ready.host}:{ready.port}"
    return f"command {ready.command!r}"


def _check(ready: ReadySpec, cwd: Path) -> bool:
    if ready.url:
        try:
            with urllib.request.urlopen(ready.url, timeout=2) as resp:
                return int(resp.status) < 500
        except urllib.error.HTTPError as e:
            return e.code < 500
        except (OSError, ValueError):
            return False
    if ready.port:
        try:
            with socket.create_connection((ready.host, ready.port), timeout=1):
                return True
        except OSError:
            return False
    assert ready.command is not None
    done = subprocess.run(
        ready.command,
        shell=True,
        cwd=cwd,
        env=sut_environment(),  # as the start command's: `python -m …` is this install's
        capture_output=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0
