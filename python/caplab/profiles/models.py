"""The hardware a role runs on, as plain data: CPU quota, memory limit, volume and link classes.

Parsers accept what people type in a study file (``256M``, ``4G``, ``100mbit``) and raise
``ValueError`` with a message that names the field and gives examples, so the spec can prefix it
with file:line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from caplab.profiles.device_models import DeviceModel

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)bit\s*$", re.IGNORECASE)
_RATE_FACTOR = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_VOLUME_FIELDS = {"size", "read_iops", "write_iops", "read_bw", "write_bw", "dwpd", "years", "tbw"}


def _scalar(value: object, what: str) -> str | int:
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{what}: {value!r} is not a size (examples: 256M, 4G, 1048576)")


def parse_size(text: str | int, what: str = "size") -> int:
    """Bytes from ``256M``, ``4G``, ``512Ki``, ``1GiB`` or a bare number of bytes (binary units:
    1K = 1024, as memory limits and disk images are counted)."""
    if isinstance(text, bool):
        raise ValueError(f"{what}: {text!r} is not a size (examples: 256M, 4G, 1048576)")
    if isinstance(text, int):
        value = float(text)
    else:
        m = _SIZE.match(str(text))
        if not m or (m.group(3) and not m.group(2)):
            raise ValueError(f"{what}: {text!r} is not a size (examples: 256M, 4G, 1048576)")
        value = float(m.group(1)) * _SIZE_FACTOR[m.group(2).lower()]
    if value <= 0:
        raise ValueError(f"{what} must be > 0, got {text!r}")
    return int(value)


def parse_rate(text: str | int, what: str = "rate") -> int:
    """Bits per second from tc's spelling: ``100mbit``, ``1gbit``, ``512kbit`` (decimal units, as
    link speeds are counted), or a bare number of bits per second."""
    if isinstance(text, bool):
        raise ValueError(f"{what}: {text!r} is not a link rate (examples: 100mbit, 1gbit)")
    if isinstance(text, int):
        value = float(text)
    else:
        m = _RATE.match(str(text))
        if not m:
            raise ValueError(f"{what}: {text!r} is not a link rate (examples: 100mbit, 1gbit)")
        value = float(m.group(1)) * _RATE_FACTOR[m.group(2).lower()]
    if value < 8000:
        raise ValueError(f"{what} must be at least 8kbit, got {text!r}")
    return int(value)


def format_size(n: int) -> str:
    for unit, factor in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor:
            return f"{n / factor:g}{unit}"
    return f"{n}B"


def format_rate(bits: int) -> str:
    for unit, factor in (("Gbit", 10**9), ("Mbit", 10**6), ("kbit", 10**3)):
        if bits >= factor:
            return f"{bits / factor:g} {unit}/s"
    return f"{bits} bit/s"


@dataclass(frozen=True)
class CpuLimit:
    """A CPU bandwidth quota in profile cores, optionally pinned to host CPUs (``"0-1"``)."""

    cpus: float
    cpuset: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int | float) or self.cpus <= 0:
            raise ValueError(f"cpus must be a number > 0, got {self.cpus!r}")
        if self.cpuset is not None and not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", self.cpuset):
            raise ValueError(f"cpuset: {self.cpuset!r} is not a CPU list (examples: 0, 0-1, 0,2)")

    def host_cpus(self, scale: float) -> float:
        """The host CPUs the quota grants when one profile core is ``scale`` host cores."""
        return self.cpus * scale


@dataclass(frozen=True)
class MemoryLimit:
    """A memory limit in bytes; swap stays off unless ``swap`` is set (emulated RAM is RAM)."""

    limit_bytes: int
    swap: bool = False

    def __post_init__(self) -> None:
        if self.limit_bytes < 4 << 20:
            raise ValueError(f"memory must be at least 4M, got {self.limit_bytes} bytes")

    @classmethod
    def parse(cls, text: str | int) -> MemoryLimit:
        return cls(parse_size(text, "memory"))


@dataclass(frozen=True)
class VolumeClass:
    """A class of disk: an image of ``size`` bytes with device-level IOPS and bandwidth ceilings
    (None = not throttled) and, for endurance estimates, the rated drive writes."""

    size: int
    read_iops: int | None = None
    write_iops: int | None = None
    read_bw: int | None = None
    write_bw: int | None = None
    dwpd: float | None = None
    years: float | None = None
    tbw: float | None = None

    def __post_init__(self) -> None:
        if self.size < 16 << 20:
            raise ValueError(f"volume size must be at least 16M (ext4 needs room), got {self.size}")
        for name in ("read_iops", "write_iops", "read_bw", "write_bw"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a whole number > 0, got {value!r}")
        for name in ("dwpd", "years", "tbw"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")

    @classmethod
    def parse(cls, name: str, fields: Mapping[str, object]) -> VolumeClass:
        """A volume class from the study file's mapping (``{size: 2G, write_iops: 180, write_bw:
        150M}``); errors name ``volumes.NAME.FIELD``."""
        where = f"volumes.{name}"
        unknown = sorted(set(fields) - _VOLUME_FIELDS)
        if unknown:
            known = ", ".join(sorted(_VOLUME_FIELDS))
            raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {known})")
        if "size" not in fields:
            raise ValueError(f"{where}: size is required (example: size: 2G)")
        size = parse_size(_scalar(fields["size"], f"{where}.size"), f"{where}.size")
        values: dict[str, Any] = {"size": size} | _volume_limits(where, fields)
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc

    @property
    def throttled(self) -> bool:
        return any(v is not None for v in (self.read_iops, self.write_iops, self.read_bw, self.write_bw))

    def describe(self) -> str:
        parts = []
        if self.read_iops == self.write_iops and self.read_iops is not None:
            parts.append(f"{self.read_iops} IOPS")
        else:
            parts += [f"{v} {k} IOPS" for k, v in (("read", self.read_iops), ("write", self.write_iops)) if v]
        if self.read_bw == self.write_bw and self.read_bw is not None:
            parts.append(f"{format_size(self.read_bw)}B/s")
        else:
            parts += [
                f"{format_size(v)}B/s {k}" for k, v in (("read", self.read_bw), ("write", self.write_bw)) if v
            ]
        limits = " throttle, ".join(parts) + " throttle" if parts else "no throttle"
        return f"{limits} on a {format_size(self.size)} loop volume"


def _volume_limits(where: str, fields: Mapping[str, object]) -> dict[str, Any]:
    """A volume class's optional fields, each checked for its kind: bandwidths are sizes, IOPS
    whole numbers, endurance figures (dwpd, years, tbw) positive numbers."""
    values: dict[str, Any] = {}
    for key in ("read_bw", "write_bw"):
        if key in fields:
            values[key] = parse_size(_scalar(fields[key], f"{where}.{key}"), f"{where}.{key}")
    for key in ("read_iops", "write_iops"):
        if key in fields:
            value = fields[key]
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{where}.{key} must be a whole number > 0, got {value!r}")
            values[key] = value
    for key in ("dwpd", "years", "tbw"):
        if key in fields:
            value = fields[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{where}.{key} must be a number > 0, got {value!r}")
            values[key] = float(value)
    return values


@dataclass(frozen=True)
class LinkClass:
    """A network link: a rate ceiling in bits per second each way, the MTU, and the round-trip
    time it adds (distance, switches: what a direct cable saves), in milliseconds."""

    rate_bits: int
    mtu: int = 1500
    rtt_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.rate_bits < 8000:
            raise ValueError(f"link rate must be at least 8kbit, got {self.rate_bits} bit/s")
        if not 576 <= self.mtu <= 65535:
            raise ValueError(f"mtu must be within 576..65535, got {self.mtu}")
        if not 0 <= self.rtt_ms <= 1000:
            raise ValueError(f"rtt must be within 0..1s, got {self.rtt_ms:g} ms")

    @classmethod
    def parse(cls, rate: str | int, mtu: int = 1500, rtt_ms: float = 0.0) -> LinkClass:
        return cls(parse_rate(rate, "link rate"), mtu, rtt_ms)

    def describe(self) -> str:
        rtt = f", {self.rtt_ms:g} ms added round trip" if self.rtt_ms else ""
        return f"{format_rate(self.rate_bits)} link, MTU {self.mtu}{rtt}"


@dataclass(frozen=True)
class Profile:
    """One role's hardware: cores, memory, named volumes and an optional link."""

    name: str
    cpus: CpuLimit | None = None
    memory: MemoryLimit | None = None
    volumes: dict[str, VolumeClass] = field(default_factory=dict)
    link: LinkClass | None = None
    volume_class_names: dict[str, str] = field(default_factory=dict)
    link_class_name: str | None = None
    devices: dict[str, tuple[str, DeviceModel]] = field(default_factory=dict)
    """Volumes on device models: volume → (device name, model). Volumes naming one device are
    directories of its one filesystem."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise ValueError(f"profile name {self.name!r}: use letters, digits, '_', '.', '-'")
        for volume in (*self.volumes, *self.devices):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", volume) or volume in (".", ".."):
                raise ValueError(f"profile {self.name}: volume name {volume!r}: use letters, digits, _ . -")

    @classmethod
    def build(
        cls,
        name: str,
        *,
        cpus: float | None = None,
        cpuset: str | None = None,
        memory: str | int | None = None,
        swap: bool = False,
        volumes: dict[str, str] | None = None,
        link: str | None = None,
        volume_classes: dict[str, VolumeClass] | None = None,
        link_classes: dict[str, LinkClass] | None = None,
        device_models: dict[str, DeviceModel] | None = None,
    ) -> Profile:
        """A profile from the study file's words: volumes and link name classes defined alongside;
        an unknown class name raises naming the field and the classes that exist."""
        known_volumes = volume_classes or {}
        known_links = link_classes or {}
        known_devices = device_models or {}
        chosen: dict[str, VolumeClass] = {}
        on_devices: dict[str, tuple[str, DeviceModel]] = {}
        for volume, class_name in (volumes or {}).items():
            if class_name in known_devices:
                on_devices[volume] = (class_name, known_devices[class_name])
                continue
            if class_name not in known_volumes:
                raise ValueError(
                    f"profile {name}: volumes.{volume}: unknown volume class or device {class_name!r}"
                    f" (defined: {', '.join(sorted({*known_volumes, *known_devices})) or 'none'})"
                )
            chosen[volume] = known_volumes[class_name]
        chosen_link = None
        if link is not None:
            if link not in known_links:
                raise ValueError(
                    f"profile {name}: link: unknown link class {link!r}"
                    f" (defined: {', '.join(sorted(known_links)) or 'none'})"
                )
            chosen_link = known_links[link]
        return cls(
            name,
            cpus=CpuLimit(cpus, cpuset) if cpus is not None else None,
            memory=MemoryLimit(parse_size(memory, "memory"), swap) if memory is not None else None,
            volumes=chosen,
            link=chosen_link,
            volume_class_names={v: c for v, c in (volumes or {}).items() if v in chosen},
            link_class_name=link,
            devices=on_devices,
        )

    def describe(self, scale: float = 1.0) -> list[str]:
        """One line per resource, both ways where the emulation scale matters:
        ``8 cores, emulated as 2.0 host CPUs``, ``data (hdd): 180 IOPS throttle on a 2G loop volume``."""
        lines = []
        if self.cpus is not None:
            lines.append(describe_cpus(self.cpus, scale))
        if self.memory is not None:
            swap = "" if self.memory.swap else ", no swap"
            lines.append(f"{format_size(self.memory.limit_bytes)} memory{swap}")
        for volume, vclass in self.volumes.items():
            class_name = self.volume_class_names.get(volume)
            label = f"{volume} ({class_name})" if class_name and class_name != volume else volume
            lines.append(f"{label}: {vclass.describe()}")
        for volume, (device, model) in self.devices.items():
            lines.append(f"{volume} (on {device}): {model.describe()}")
        if self.link is not None:
            label = f"{self.link_class_name}: " if self.link_class_name else ""
            lines.append(f"{label}{self.link.describe()}")
        return lines


def scale_cpu(cpus: float, scale: float) -> float:
    """Host CPUs for ``cpus`` profile cores when one profile core is ``scale`` host cores."""
    if scale <= 0:
        raise ValueError(f"scale.cpu must be > 0, got {scale!r}")
    return cpus * scale


def describe_cpus(limit: CpuLimit, scale: float = 1.0) -> str:
    cores = f"{limit.cpus:g} core{'s' if limit.cpus != 1 else ''}"
    pinned = f" on host CPUs {limit.cpuset}" if limit.cpuset else ""
    if scale == 1.0:
        return f"{cores} ({limit.cpus:g} host CPUs{pinned})"
    host = scale_cpu(limit.cpus, scale)
    shown = f"{host:.1f}" if round(host, 1) == host else f"{host:.3g}"  # 2.0, but 0.25 not 0.2
    return f"{cores}, emulated as {shown} host CPUs{pinned}"
