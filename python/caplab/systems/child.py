"""What a system's child process shares with every other: it dies with its supervisor and leaves
Ctrl-C to it.

``PR_SET_PDEATHSIG`` has the kernel SIGKILL a child when its supervisor dies, so not even a
SIGKILLed supervisor leaves orphans holding ports or a database; SIGINT is ignored because a Ctrl-C
in the terminal reaches the whole process group, and the supervisor, not each child, decides the
order of shutdown.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def bind_to_parent(parent_pid: int | None) -> None:
    """Dies with the supervisor ``parent_pid`` and leaves SIGINT to it (None: run stand-alone,
    nothing to bind to). Exits 1 if the supervisor is already gone."""
    if parent_pid is None:
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the supervisor died before prctl took effect
        sys.exit(1)
