"""What the engine's child processes share: they die with the supervisor and leave Ctrl-C to it.

``PR_SET_PDEATHSIG`` has the kernel SIGKILL a child when the supervisor dies, so not even a
SIGKILLed supervisor leaves orphans holding the ports or the database; SIGINT is ignored because a
Ctrl-C reaches the whole process group and the supervisor decides the order of shutdown.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
from typing import NoReturn

PR_SET_PDEATHSIG = 1


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--parent-pid", type=int, default=None, help="the supervisor (dies with it)")
    p.add_argument("--counters", default=None, help="shared counters file (see counters.py)")


def bind_to_parent(parent_pid: int | None) -> None:
    if parent_pid is None:
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the supervisor died before prctl took effect
        sys.exit(1)


def log(who: str, message: str) -> None:
    print(f"hl7 {who}: {message}", file=sys.stderr, flush=True)


def fail(who: str, message: str) -> NoReturn:
    log(who, message)
    sys.exit(1)
