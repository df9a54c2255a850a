"""``python -m caplab.profiles.device --mountpoint DIR --backing FILE --model JSON``: the process
that serves a device model.

`ModelDevice` starts it, waits for its ``ready`` line, then puts a loop device on
``DIR/device``. The engine's ``serve_device`` holds each read, write and flush for the time the
model gives, then does it on the backing file. It runs until SIGTERM; on the way out it prints
what it served and its own CPU time as one JSON line (caplab's cost, never the system's).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import threading
import time

from caplab._engine import serve_device

READY = "ready"
"""The line the daemon prints once its FUSE mount is up."""


def stop_when_orphaned(interval_s: float = 0.5) -> None:
    """SIGTERM to this process once its parent is gone (caplab killed outright): the daemon runs
    in a session of its own, so nothing else would stop it. What it leaves mounted, the next
    run's sweep removes."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m caplab.profiles.device", description=__doc__)
    p.add_argument("--mountpoint", required=True, help="an empty directory for the FUSE mount")
    p.add_argument("--backing", required=True, help="the file that holds the device's data")
    p.add_argument("--model", required=True, help="the device model, as JSON")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    stop_when_orphaned()
    try:
        served = json.loads(
            serve_device(args.mountpoint, args.backing, args.model, lambda: print(READY, flush=True))
        )
    except (RuntimeError, ValueError) as exc:
        print(f"caplab device model: {exc}", file=sys.stderr)
        return 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps(served | {"cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
