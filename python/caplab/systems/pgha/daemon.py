"""The cluster's long-running programs (etcd, one Patroni per node) as daemons of their own: a new
session, output to a log file, the pid in a file beside it, so any process — ``status``,
``kill-primary`` or ``stop`` run from another shell — finds and ends them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from caplab.systems.exited import exited
from caplab.systems.pgpair.server import ServerError, ServerUser


@dataclass(frozen=True)
class Daemon:
    """One program, known by its pid file; ``marker`` is a word of its command line (its config
    or data path) that tells it from an unrelated process given the same pid later."""

    name: str
    pid_file: Path
    log_file: Path
    marker: str

    def spawn(self, cmd: list[str], user: ServerUser, env: dict[str, str], *, switch: bool = True) -> int:
        """Starts ``cmd`` as ``user`` in a session of its own; returns its pid. ``switch=False``:
        ``cmd`` switches to the user itself (``nsenter --setuid``, which must enter as root)."""
        if self.pid() is not None:
            raise ServerError(f"{self.name} is running already (pid {self.pid()})")
        self.log_file.touch(exist_ok=True)
        user.own(self.log_file)
        switch = switch and user.uid is not None
        with self.log_file.open("ab") as log:
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd="/",
                    env=env,
                    start_new_session=True,
                    user=user.uid if switch else None,
                    group=user.gid if switch else None,
                    extra_groups=[] if switch else None,
                )
            except FileNotFoundError as e:
                raise ServerError(f"{self.name}: {e.filename} is not installed") from None
        self.pid_file.write_text(f"{proc.pid}\n")
        return proc.pid

    def pid(self) -> int | None:
        """The live daemon's pid, or None."""
        try:
            pid = int(self.pid_file.read_text().strip())
            proc = psutil.Process(pid)
            alive = proc.status() != psutil.STATUS_ZOMBIE and self.marker in " ".join(proc.cmdline())
        except (OSError, ValueError, psutil.Error):
            return None
        return pid if alive else None

    def signal(self, signum: signal.Signals) -> int | None:
        """Sends ``signum`` to the daemon if it runs; returns its pid."""
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        return pid

    def stop(self, timeout_s: float) -> None:
        """SIGTERM, then SIGKILL what has not exited within ``timeout_s``."""
        pid = self.signal(signal.SIGTERM)
        if pid is None:
            return
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if not exited(proc, timeout_s):
                proc.kill()
                exited(proc, 5.0)
