"""A cell's hardware as a study describes it, turned into the profiles caplab applies: which
profile each role runs on, its volume and link classes resolved. The study file's model is read
through the small protocols below, so this package stays free of the spec (which checks a study
with these same functions before any cell runs, and the runner applies what they return)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from caplab.profiles.device_design import DeviceWords, RatingWords, device_model
from caplab.profiles.models import LinkClass, Profile, VolumeClass


class VolumeWords(RatingWords, Protocol):
    """A class of disk as the study writes it (``volumes:``): size, throttles, endurance."""

    @property
    def read_iops(self) -> int | None: ...
    @property
    def write_iops(self) -> int | None: ...
    @property
    def read_bw(self) -> int | None: ...
    @property
    def write_bw(self) -> int | None: ...


class LinkWords(Protocol):
    """A class of link as the study writes it (``links:``); ``rtt`` in seconds."""

    @property
    def rate(self) -> int: ...
    @property
    def mtu(self) -> int: ...
    @property
    def rtt(self) -> float: ...


class ProfileWords(Protocol):
    """One profile as the study writes it (``profiles:``): volumes and link name classes."""

    @property
    def cpus(self) -> float | None: ...
    @property
    def cpuset(self) -> str | None: ...
    @property
    def memory(self) -> int | None: ...
    @property
    def swap(self) -> bool: ...
    @property
    def volumes(self) -> Mapping[str, str]: ...
    @property
    def link(self) -> str | None: ...


class HardwareWords(Protocol):
    """A cell's hardware sections, and the profile each role runs on in that cell."""

    @property
    def profiles(self) -> Mapping[str, ProfileWords]: ...
    @property
    def volumes(self) -> Mapping[str, VolumeWords]: ...
    @property
    def links(self) -> Mapping[str, LinkWords]: ...
    @property
    def devices(self) -> Mapping[str, DeviceWords]: ...
    def role_profiles(self) -> dict[str, str]: ...


def volume_class(words: VolumeWords) -> VolumeClass:
    return VolumeClass(
        size=words.size,
        read_iops=words.read_iops,
        write_iops=words.write_iops,
        read_bw=words.read_bw,
        write_bw=words.write_bw,
        dwpd=words.dwpd,
        years=words.years,
        tbw=words.tbw,
    )


def link_class(words: LinkWords) -> LinkClass:
    return LinkClass(words.rate, words.mtu, words.rtt * 1000.0)


def role_hardware(cell: HardwareWords) -> dict[str, Profile]:
    """``{role: Profile}`` for every role the cell puts on a profile; raises ValueError for a
    class a profile names that the study does not define (the spec checks it first)."""
    volume_classes = {n: volume_class(v) for n, v in cell.volumes.items()}
    link_classes = {n: link_class(v) for n, v in cell.links.items()}
    device_models = {n: device_model(n, cell.devices) for n in cell.devices}
    out: dict[str, Profile] = {}
    for role, name in cell.role_profiles().items():
        p = cell.profiles[name]
        out[role] = Profile.build(
            name,
            cpus=p.cpus,
            cpuset=p.cpuset,
            memory=p.memory,
            swap=p.swap,
            volumes=dict(p.volumes),
            link=p.link,
            volume_classes=volume_classes,
            link_classes=link_classes,
            device_models=device_models,
        )
    return out


def volume_ratings(cell: HardwareWords) -> dict[str, tuple[str, RatingWords]]:
    """``{volume name: (class, its words)}`` over the roles' profiles: the drives whose endurance
    the report estimates. A device holding several volumes is rated once, under the name its
    figures are measured by (``data+log``)."""
    out: dict[str, tuple[str, RatingWords]] = {}
    for name in set(cell.role_profiles().values()):
        held: dict[str, list[str]] = {}
        for volume, vclass in cell.profiles[name].volumes.items():
            if vclass in cell.volumes:
                out[volume] = (vclass, cell.volumes[vclass])
            elif vclass in cell.devices:
                held.setdefault(vclass, []).append(volume)
        out |= {"+".join(volumes): (device, cell.devices[device]) for device, volumes in held.items()}
    return out
