"""Where a study ran: recorded with it so results can be compared and reported honestly."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

import psutil

from caplab import __version__
from caplab.engine import ENGINE_VERSION


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


VIRTUAL_DISKS = ("loop", "ram", "zram", "dm-", "md", "nbd", "sr")
SYS_BLOCK = Path("/sys/block")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def disks() -> list[dict[str, Any]]:
    """The machine's block devices (virtual ones left out): a storage-bound result means little
    without knowing what the storage was."""
    out: list[dict[str, Any]] = []
    for dev in sorted(SYS_BLOCK.iterdir()) if SYS_BLOCK.is_dir() else []:
        if dev.name.startswith(VIRTUAL_DISKS):
            continue
        sectors = _read(dev / "size")
        rotational = _read(dev / "queue" / "rotational")
        out.append(
            {
                "name": dev.name,
                "model": _read(dev / "device" / "model") or "unknown",
                "size_gb": round(int(sectors) * 512 / 1e9, 1) if sectors and sectors.isdigit() else None,
                "rotational": rotational == "1" if rotational is not None else None,
            }
        )
    return out


def environment() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "caplab_version": __version__,
        "engine_version": ENGINE_VERSION,
        "generator": "local engine threads on this host",
        "disks": disks(),
    }
