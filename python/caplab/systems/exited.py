"""Whether a daemon a system stopped has exited, without waiting for init to reap it.

A daemon started detached (slapd by a `directory start` that has since exited, etcd and Patroni by
`pgha start`) has init for its parent, and init reaps it in its own time: 1-2 s on some hosts,
which ``psutil``'s ``wait`` waits for, once per daemon per stop. A zombie holds no port or file any
more, so it counts as stopped here.
"""

from __future__ import annotations

import contextlib
import os
import time

import psutil

POLL_S = 0.01


def exited(process: psutil.Process, timeout_s: float) -> bool:
    """Waits until ``process`` has exited — gone, or a zombie (reaped here if it is our own
    child); False if it still runs after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            zombie = process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
        if zombie:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(process.pid, os.WNOHANG)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
