"""What the engine's child processes share: their common flags and how they log and fail.

Each child is bound to the supervisor with ``caplab.systems.child.bind_to_parent``: it dies with
it and leaves Ctrl-C to it.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--parent-pid", type=int, default=None, help="the supervisor (dies with it)")
    p.add_argument("--counters", default=None, help="shared counters file (see counters.py)")


def log(who: str, message: str) -> None:
    print(f"hl7 {who}: {message}", file=sys.stderr, flush=True)


def fail(who: str, message: str) -> NoReturn:
    log(who, message)
    sys.exit(1)
