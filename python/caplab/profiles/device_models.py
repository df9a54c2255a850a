"""Device models as plain data: what the engine's device daemon is built from (its JSON, one
``model`` per kind). Sizes in bytes, rates in bytes per second, times as their field names say.
Defaults are a 7,200 rpm disk's data sheet: 8.5 ms average seek, 150 MB/s."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Literal

CacheMode = Literal["off", "write-through", "write-back", "battery-backed"]
RaidLevel = Literal["raid0", "raid1", "raid10"]
EngineJson = dict[str, object]


@dataclass(frozen=True)
class Cache:
    """A write cache: a drive's own, or a RAID controller's in front of its set."""

    mode: CacheMode = "off"
    size: int = 256 << 20
    hit_us: float = 20.0
    interface_rate: float = 600e6

    def engine(self) -> EngineJson:
        return asdict(self)


@dataclass(frozen=True)
class Hdd:
    size: int
    rpm: float = 7200.0
    avg_seek_ms: float = 8.5
    track_to_track_ms: float = 1.0
    full_stroke_ms: float = 16.0
    media_rate: float = 150e6
    queue_depth: int = 32
    cache: Cache = field(default_factory=Cache)
    model: Literal["hdd"] = "hdd"

    def engine(self) -> EngineJson:
        return asdict(self) | {"cache": self.cache.engine()}

    def describe(self) -> str:
        return (
            f"hdd: {self.rpm:,.0f} rpm, {self.avg_seek_ms:g} ms seek, {self.media_rate / 1e6:g} MB/s,"
            f" cache {self.cache.mode}, device model"
        )


@dataclass(frozen=True)
class Ssd:
    size: int
    read_us: float = 90.0
    write_us: float = 25.0
    channels: int = 8
    read_rate: float = 500e6
    write_rate: float = 450e6
    flush_us: float = 20.0
    spare: int | None = None
    steady_write_rate: float | None = None
    model: Literal["ssd"] = "ssd"

    def engine(self) -> EngineJson:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        return (
            f"ssd: {self.read_us:g} µs read, {self.write_us:g} µs program, {self.channels} channels,"
            " device model"
        )


@dataclass(frozen=True)
class Throttle:
    """A provisioned volume (a cloud disk): IOPS and bytes per second, released evenly."""

    size: int
    read_iops: float | None = None
    write_iops: float | None = None
    read_bw: float | None = None
    write_bw: float | None = None
    latency_us: float = 0.0
    model: Literal["throttle"] = "throttle"

    def engine(self) -> EngineJson:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        return f"throttle: {self.read_iops or '∞'} read / {self.write_iops or '∞'} write IOPS, device model"


@dataclass(frozen=True)
class Raid:
    """``disks`` members of ``member``'s kind (each sized to its share of ``size``), striped in
    units of ``stripe`` bytes, behind a controller ``cache``."""

    model: RaidLevel
    size: int
    member: Hdd | Ssd
    disks: int = 2
    stripe: int = 64 << 10
    cache: Cache = field(default_factory=Cache)

    def member_size(self) -> int:
        data = {"raid0": self.disks, "raid1": 1, "raid10": self.disks // 2}[self.model]
        share = -(-self.size // data)
        return -(-share // self.stripe) * self.stripe

    def engine(self) -> EngineJson:
        member = replace(self.member, size=self.member_size())
        return {
            "model": self.model,
            "size": self.size,
            "disks": self.disks,
            "stripe": self.stripe,
            "member": member.engine(),
            "cache": self.cache.engine(),
        }

    def describe(self) -> str:
        return (
            f"{self.model} of {self.disks} × ({self.member.describe()}), controller cache {self.cache.mode}"
        )


DeviceModel = Hdd | Ssd | Throttle | Raid


PRESETS: dict[str, Hdd | Ssd] = {
    "hdd-7k": Hdd(size=0),
    "hdd-10k": Hdd(
        size=0, rpm=10_000, avg_seek_ms=4.5, track_to_track_ms=0.5, full_stroke_ms=9.0, media_rate=150e6
    ),
    "hdd-15k": Hdd(
        size=0, rpm=15_000, avg_seek_ms=3.5, track_to_track_ms=0.3, full_stroke_ms=7.0, media_rate=200e6
    ),
    "ssd": Ssd(size=0),
}
"""Members a RAID may name by kind (``of: hdd-10k``), after typical data sheets; sized by the
array."""
