"""Where a study ran: recorded with it so results can be compared and reported honestly."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

import psutil

from caplab import __version__, _engine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "caplab_version": __version__,
        "engine_version": _engine.__version__,
        "generator": "local engine threads on this host",
    }
