"""Where a study ran: recorded with it so results can be compared and reported honestly."""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from pathlib import Path

import psutil

from caplab import __version__
from caplab.engine import ENGINE_VERSION
from caplab.json_types import JsonDict


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


@dataclass(frozen=True)
class Disk:
    """One block device: a storage-bound result means little without knowing what the storage was."""

    name: str
    model: str
    size_gb: float | None
    rotational: bool | None

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "model": self.model,
            "size_gb": self.size_gb,
            "rotational": self.rotational,
        }


@dataclass(frozen=True)
class Environment:
    """The host a study ran on and the caplab that ran it, as recorded with the study."""

    hostname: str
    os: str
    cpu_model: str
    cores: int | None
    memory_gb: float
    python: str
    caplab_version: str
    engine_version: str
    generator: str
    disks: tuple[Disk, ...]

    def to_json(self) -> JsonDict:
        """The stored form: the study's ``environment``, which the runner adds its baseline to."""
        return {
            "hostname": self.hostname,
            "os": self.os,
            "cpu_model": self.cpu_model,
            "cores": self.cores,
            "memory_gb": self.memory_gb,
            "python": self.python,
            "caplab_version": self.caplab_version,
            "engine_version": self.engine_version,
            "generator": self.generator,
            "disks": [d.to_json() for d in self.disks],
        }


def disks() -> list[Disk]:
    """The machine's block devices, virtual ones left out."""
    out: list[Disk] = []
    for dev in sorted(SYS_BLOCK.iterdir()) if SYS_BLOCK.is_dir() else []:
        if dev.name.startswith(VIRTUAL_DISKS):
            continue
        sectors = _read(dev / "size")
        rotational = _read(dev / "queue" / "rotational")
        out.append(
            Disk(
                name=dev.name,
                model=_read(dev / "device" / "model") or "unknown",
                size_gb=round(int(sectors) * 512 / 1e9, 1) if sectors and sectors.isdigit() else None,
                rotational=rotational == "1" if rotational is not None else None,
            )
        )
    return out


def this_host() -> Environment:
    return Environment(
        hostname=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}",
        cpu_model=_cpu_model(),
        cores=os.cpu_count(),
        memory_gb=round(psutil.virtual_memory().total / 2**30, 1),
        python=platform.python_version(),
        caplab_version=__version__,
        engine_version=ENGINE_VERSION,
        generator="local engine threads on this host",
        disks=tuple(disks()),
    )


def environment() -> JsonDict:
    """This host as the study stores it."""
    return this_host().to_json()
