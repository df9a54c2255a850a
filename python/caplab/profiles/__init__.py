"""The hardware a role runs on, emulated on one host with the kernel's own mechanisms: a CPU quota
(scaled: one profile core = ``scale`` host cores), a memory limit with swap off, volumes (ext4 on
throttled loop devices) and links (a network namespace behind a shaped veth). One module per
resource kind behind one interface (``resource.RoleResource``); ``CellHardware`` applies a cell's
profiles and removes them after it. Imports nothing else of caplab."""

from caplab.profiles.errors import ProfileError
from caplab.profiles.hardware import CellHardware
from caplab.profiles.models import (
    CpuLimit,
    LinkClass,
    MemoryLimit,
    Profile,
    VolumeClass,
    describe_cpus,
    parse_rate,
    parse_size,
    scale_cpu,
)
from caplab.profiles.support import check_support
from caplab.profiles.sweep import sweep_leftovers

__all__ = [
    "CellHardware",
    "CpuLimit",
    "LinkClass",
    "MemoryLimit",
    "Profile",
    "ProfileError",
    "VolumeClass",
    "check_support",
    "describe_cpus",
    "parse_rate",
    "parse_size",
    "scale_cpu",
    "sweep_leftovers",
]
