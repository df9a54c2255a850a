"""A study's ``devices:`` entry, turned into the device model caplab serves. Read through the
protocol below, so this package stays free of the spec (as ``design`` does for volumes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from caplab.profiles.device_models import PRESETS, Cache, CacheMode, DeviceModel, Hdd, Raid, Ssd, Throttle

_HDD = ("rpm", "avg_seek_ms", "track_to_track_ms", "full_stroke_ms", "media_rate", "queue_depth")
_SSD = (
    "read_us",
    "write_us",
    "channels",
    "read_rate",
    "write_rate",
    "flush_us",
    "spare",
    "steady_write_rate",
)
_THROTTLE = ("read_iops", "write_iops", "read_bw", "write_bw", "latency_us")


class RatingWords(Protocol):
    """A drive's size and endurance as the study writes it, on a volume class or a device."""

    @property
    def size(self) -> int: ...
    @property
    def dwpd(self) -> float | None: ...
    @property
    def years(self) -> float | None: ...
    @property
    def tbw(self) -> float | None: ...


class DeviceWords(RatingWords, Protocol):
    """A device as the study writes it: ``model``, ``size``, ``cache``, its kind's fields (None
    where the study left the default) and its endurance rating."""

    @property
    def model(self) -> str: ...
    @property
    def cache(self) -> CacheMode | None: ...
    @property
    def cache_size(self) -> int | None: ...
    @property
    def of(self) -> str | None: ...
    @property
    def disks(self) -> int | None: ...
    @property
    def stripe(self) -> int | None: ...


def _given(words: DeviceWords, names: tuple[str, ...]) -> dict[str, object]:
    return {n: getattr(words, n) for n in names if getattr(words, n, None) is not None}


def _cache(words: DeviceWords) -> Cache:
    base = Cache(words.cache or "off")
    return replace(base, size=words.cache_size) if words.cache_size else base


def device_model(name: str, devices: Mapping[str, DeviceWords], _seen: tuple[str, ...] = ()) -> DeviceModel:
    """The model of device ``name``; a RAID's ``of`` names another device or a preset. Raises
    ValueError for an unknown or circular ``of``."""
    words = devices[name]
    kind = words.model
    if kind == "hdd":
        return Hdd(size=words.size, cache=_cache(words), **_given(words, _HDD))  # type: ignore[arg-type]
    if kind == "ssd":
        return Ssd(size=words.size, **_given(words, _SSD))  # type: ignore[arg-type]
    if kind == "throttle":
        return Throttle(size=words.size, **_given(words, _THROTTLE))  # type: ignore[arg-type]
    of = words.of or "hdd-7k"
    if of in _seen or of == name:
        raise ValueError(f"device {name}: of: {of} refers back to itself")
    if of in devices:
        member = device_model(of, devices, (*_seen, name))
        if not isinstance(member, Hdd | Ssd):
            raise ValueError(f"device {name}: of: {of} is a {devices[of].model}; a RAID's members are disks")
    elif of in PRESETS:
        member = PRESETS[of]
    else:
        known = ", ".join(sorted({*devices, *PRESETS} - {name}))
        raise ValueError(f"device {name}: of: {of} is neither a device nor a preset ({known})")
    return Raid(
        model=kind,  # type: ignore[arg-type]
        size=words.size,
        member=member,
        disks=words.disks or (4 if kind == "raid10" else 2),
        stripe=words.stripe or 64 << 10,
        cache=_cache(words),
    )
