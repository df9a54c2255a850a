"""What every tier process shares: its place under the supervisor, its stop signal, its listener.

A tier started by the supervisor dies with it and leaves Ctrl-C to it (``bind_to_parent``, shared
with every system in caplab.systems.child); SIGTERM stops a tier cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from caplab.systems.child import bind_to_parent


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--parent-pid", type=int, default=None, help="the supervisor (dies with it)")
    p.add_argument("--counters", default=None, help="shared counters file (see counters.py)")
    p.add_argument("--slot", type=int, default=0, help="this process's slot in the counters file")


def run_tier(
    args: argparse.Namespace, serve: Callable[[argparse.Namespace], Coroutine[Any, Any, None]]
) -> NoReturn:
    """A tier's whole life: bound to its supervisor, serving until stopped, then exit 0."""
    bind_to_parent(args.parent_pid)
    asyncio.run(serve(args))
    sys.exit(0)


def fail(who: str, message: str) -> NoReturn:
    print(f"msgbus {who}: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def stop_event(supervised: bool) -> asyncio.Event:
    """Set on SIGTERM (and SIGINT when run stand-alone)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if not supervised:
        loop.add_signal_handler(signal.SIGINT, stop.set)
    return stop


async def listen(
    who: str, factory: Callable[[], asyncio.BaseProtocol], port: int, what: str = "listen"
) -> tuple[asyncio.Server, int]:
    """A loopback listener on ``port`` (0: any free port) and the port it got; a clear exit if
    the port is taken."""
    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(factory, "127.0.0.1", port, backlog=4096)
    except OSError as e:
        reason = "the port is in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        fail(who, f"cannot {what} on 127.0.0.1:{port}: {reason}")
    bound: int = server.sockets[0].getsockname()[1]
    return server, bound


def announce(*lines: str) -> None:
    """Tells the supervisor this tier is ready (its first stdout line names the address)."""
    print("\n".join(lines), flush=True)
