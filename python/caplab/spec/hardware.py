"""The hardware a study describes: profiles, the volume and link classes they name, the scale
of the emulation, consolidation, and the storage baseline measured before the cells."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from caplab.profiles import parse_rate
from caplab.spec.fields import Seconds, Strict, as_size


class StorageBaselineSpec(Strict):
    """A storage baseline measured with fio before the cells (the paper's SQLIO run): 8 KB random
    reads, then writes, ``jobs`` jobs at queue depth ``depth``, in ``directory``."""

    directory: str = "."
    size: str = Field(default="64M", pattern=r"^\d+[KMG]?$")
    """Per job."""
    runtime: Seconds = 5.0
    jobs: int = Field(default=8, ge=1, le=64)
    depth: int = Field(default=8, ge=1, le=256)
    block: str = Field(default="8k", pattern=r"^\d+[kKmM]?$")


def _rate(value: Any) -> Any:
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return parse_rate(value, "rate")
        except ValueError:
            raise ValueError(f"{value!r} is not a link rate (examples: 100mbit, 1gbit)") from None
    return value


Size = Annotated[int, BeforeValidator(as_size)]
Iops = Annotated[int, Field(gt=0)]


class ProfileSpec(Strict):
    """One hardware profile: cores (a CPU quota, ``scale.cpu`` host cores each), memory, named
    volumes of a class in ``volumes:`` and a link of a class in ``links:``."""

    cpus: float | None = Field(default=None, gt=0)
    cpuset: str | None = Field(default=None, pattern=r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
    memory: Annotated[int, BeforeValidator(as_size), Field(ge=4 << 20)] | None = None
    swap: bool = False
    volumes: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")], str] = Field(default_factory=dict)
    link: str | None = None


class VolumeSpec(Strict):
    """A class of disk: an ext4 image of ``size`` on a loop device, throttled per second."""

    size: Annotated[int, BeforeValidator(as_size), Field(ge=16 << 20)]
    read_iops: Iops | None = None
    write_iops: Iops | None = None
    read_bw: Size | None = None
    write_bw: Size | None = None
    dwpd: float | None = Field(default=None, gt=0)
    years: float | None = Field(default=None, gt=0)
    tbw: float | None = Field(default=None, gt=0)


DeviceKind = Literal["hdd", "ssd", "raid0", "raid1", "raid10", "throttle"]
_FIELDS_OF: dict[str, frozenset[str]] = {
    "hdd": frozenset(
        {"rpm", "avg_seek_ms", "track_to_track_ms", "full_stroke_ms", "media_rate", "queue_depth"}
    ),
    "ssd": frozenset({"read_us", "write_us", "channels", "read_rate", "write_rate", "flush_us", "spare"}),
    "raid": frozenset({"of", "disks", "stripe"}),
    "throttle": frozenset({"read_iops", "write_iops", "read_bw", "write_bw", "latency_us"}),
}


class DeviceSpec(Strict):
    """A device model (``devices:``): a disk's physics, served to a loop device. Volumes name a
    device; several volumes on one device are directories of its one filesystem. Fields other
    than ``model``, ``size`` and ``cache`` belong to one kind each; unset ones take the kind's
    data-sheet defaults (a 7,200 rpm disk: 8.5 ms average seek, 150 MB/s)."""

    model: DeviceKind
    size: Annotated[int, BeforeValidator(as_size), Field(ge=16 << 20)] = 1 << 30
    cache: Literal["off", "write-through", "write-back", "battery-backed"] | None = None
    """A disk's own write cache, or a RAID controller's in front of its set."""
    cache_size: Size | None = None
    rpm: float | None = Field(default=None, gt=0)
    avg_seek_ms: float | None = Field(default=None, gt=0)
    track_to_track_ms: float | None = Field(default=None, gt=0)
    full_stroke_ms: float | None = Field(default=None, gt=0)
    media_rate: Size | None = None
    """Bytes per second under the head (``150M``)."""
    queue_depth: int | None = Field(default=None, ge=1, le=256)
    read_us: float | None = Field(default=None, ge=0)
    write_us: float | None = Field(default=None, ge=0)
    channels: int | None = Field(default=None, ge=1, le=256)
    read_rate: Size | None = None
    write_rate: Size | None = None
    flush_us: float | None = Field(default=None, ge=0)
    spare: Size | None = None
    steady_write_rate: Size | None = None
    of: str | None = Field(default=None, pattern=r"\S")
    """A RAID's members: another device's name, or a preset (``hdd-7k``, ``hdd-10k``, ``hdd-15k``,
    ``ssd``)."""
    disks: int | None = Field(default=None, ge=2, le=64)
    stripe: Size | None = None
    read_iops: Iops | None = None
    write_iops: Iops | None = None
    read_bw: Size | None = None
    write_bw: Size | None = None
    latency_us: float | None = Field(default=None, ge=0)
    dwpd: float | None = Field(default=None, gt=0)
    """The drive's endurance rating, as a volume class's: the report ages it at the rate written."""
    years: float | None = Field(default=None, gt=0)
    tbw: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> DeviceSpec:
        kind = "raid" if self.model.startswith("raid") else self.model
        foreign = sorted(
            name
            for other, names in _FIELDS_OF.items()
            if other != kind
            for name in names
            if getattr(self, name) is not None and name not in _FIELDS_OF[kind]
        )
        if foreign:
            raise ValueError(f"{', '.join(foreign)}: not a field of a {self.model} device")
        if kind == "raid" and self.of is None:
            raise ValueError(f"a {self.model} device needs of: (its members' device or preset)")
        if self.model == "raid10" and self.disks is not None and self.disks % 2:
            raise ValueError("raid10 needs an even number of disks")
        return self


class LinkSpec(Strict):
    rate: Annotated[int, BeforeValidator(_rate), Field(ge=8000)]
    mtu: int = Field(default=1500, ge=576, le=65535)
    rtt: Annotated[Seconds, Field(le=1.0)] = 0.0
    """The round-trip time the link adds (half each way): a longer cable, a switch or two."""


class ConsolidationSpec(Strict):
    """The Exchange paper's test 2: the same load on single-role servers (each role on its own
    profile) and on one combined server (every role on one profile, sharing it): the study gains a
    ``placement`` factor, apart and together, and the report compares the two per resource."""

    apart: dict[str, Annotated[str, Field(pattern=r"\S")]] = Field(min_length=2)
    """Role → the profile it has to itself when apart."""
    together: str = Field(pattern=r"\S")
    """The one profile every role shares when together."""


class ScaleSpec(Strict):
    cpu: float = Field(default=1.0, gt=0)
    """Host cores per profile core: 0.25 lets two host cores carry an 8-core profile."""
