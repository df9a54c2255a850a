"""Starting one server as an ordinary process tree and ending it: each server's master runs in a
session (and process group) of its own, recorded in a pid file next to its configuration, so
``stop`` — from this process or another — signals exactly that tree and waits until none of it
is left."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from caplab.systems.launch import process_tree
from caplab.systems.mail.errors import MailError
from caplab.systems.mail.osuser import ServiceUser

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
GRACE_S = 2.0


@dataclass(frozen=True)
class Server:
    """One master process: its name in messages, its command line (which names ``config``, so
    a pid reused by another program is not taken for it), its pid file and its log."""

    name: str
    command: tuple[str, ...]
    config: Path
    pid_file: Path
    log_file: Path
    user: ServiceUser | None = None
    """Run the master as this user (Dovecot); None: as ourselves (Postfix's master, root)."""

    def pid(self) -> int | None:
        """The running master's pid, or None (no pid file, a dead or reused pid)."""
        try:
            pid = int(self.pid_file.read_text())
            proc = psutil.Process(pid)
            alive = proc.status() != psutil.STATUS_ZOMBIE and str(self.config) in proc.cmdline()
        except (OSError, ValueError, psutil.Error):
            return None
        return pid if alive else None

    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        """The master and every process it started."""
        return process_tree(self.pid())

    def start(self, ports: Sequence[int]) -> None:
        """Starts the master and waits until its tree listens on every one of ``ports``."""
        if self.pid() is not None:
            raise MailError(f"{self.name} is already running (pid file {self.pid_file})")
        switch = self.user is not None and self.user.switches
        with self.log_file.open("a") as log:
            since = log.tell()  # a failure shows this start's words, not an earlier run's
            try:
                proc = subprocess.Popen(
                    list(self.command),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd="/",
                    user=self.user.uid if switch and self.user else None,
                    group=self.user.gid if switch and self.user else None,
                    extra_groups=[] if switch else None,
                )
            except FileNotFoundError as e:
                raise MailError(f"{self.name}: {e.filename} is not installed") from None
        self.pid_file.write_text(f"{proc.pid}\n")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise MailError(
                    f"{self.name} exited with status {proc.returncode}: {last_lines(self.log_file, since)}"
                )
            missing = set(ports) - listening_ports(self.pids())
            if not missing:
                return
            time.sleep(0.05)
        self.stop()
        raise MailError(
            f"{self.name} did not listen on {sorted(missing)} within {START_TIMEOUT_S:.0f} s "
            f"(a port taken by another program?): {last_lines(self.log_file, since)}"
        )

    def stop(self) -> bool:
        """SIGTERM to the master, then to whatever of its process group outlives it (Dovecot's
        master leaves a process serving an open client connection behind), SIGKILL to what is left
        after GRACE_S more. Returns once none of the group is left; False if it was not running."""
        master = self.pid()
        pid = master if master is not None else self._recorded_pid()
        self.pid_file.unlink(missing_ok=True)
        if pid is None:
            return False
        if master is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            _wait(lambda: _alive(pid), STOP_TIMEOUT_S)
        elif not group_alive(pid):
            return False  # a killed master's children, if any, are ended below
        for sig, grace in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            if not group_alive(pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, sig)
            _wait(lambda: group_alive(pid), grace)
        return True


def _wait(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is left (zombies of ours are reaped first)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-pgid, os.WNOHANG)[0] > 0:
            pass
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(
        p.info["status"] != psutil.STATUS_ZOMBIE
        for p in psutil.process_iter(["status"])
        if _pgid(p.pid) == pgid
    )


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def listening_ports(pids: Sequence[int]) -> set[int]:
    """The TCP ports these processes listen on."""
    found: set[int] = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            for c in psutil.Process(pid).net_connections("tcp"):
                if c.status == psutil.CONN_LISTEN and c.laddr:
                    found.add(c.laddr.port)
    return found


def last_lines(log: Path, since: int = 0, n: int = 6) -> str:
    """The last ``n`` non-blank lines written to ``log`` after byte ``since``, on one line."""
    try:
        with log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-n:]) or "(no output)"
