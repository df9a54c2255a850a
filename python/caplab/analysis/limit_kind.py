"""What kind of limit bounded a system: the classification the report puts into words.

A limit is stored as the limit finder returns it (limit.py's ``Limit``: the resource's name, a
coarse kind — ``hardware``, ``software``, ``generator``, ``unknown``, or ``not reached`` for a fixed
load — its utilisation and its evidence). ``LimitKind.of`` classifies it from those fields, here
and only here: which kind of resource it is (its ``ResourceScope``), whether a CPU was held by one
busy thread (its demand's note), whether the link's round trips and not its bandwidth bound it.
Nothing new is stored, so a document written before the classification existed classifies the same.
"""

from __future__ import annotations

from enum import StrEnum

from caplab.analysis.limit import BUSIEST_THREAD, ROUND_TRIPS, Limit
from caplab.analysis.scope import HOST_CPU, ResourceScope, ScopeKind


class LimitKind(StrEnum):
    """What bounded the system (or, for a fixed load, that nothing did)."""

    HOST_CPU = "host cpu"
    """The whole machine's CPU (``cpu:host``): the SUT shares it with everything else on it."""
    CPU = "cpu"
    """A role's CPU, or the CPU of roles sharing one machine, against its cores or its quota."""
    CPU_THREAD = "cpu thread"
    """A role's busiest thread at one core's worth: one process's ceiling, whatever the cores."""
    MEMORY = "memory"
    """A role pressed against its profile's memory limit, or stopped by the OOM killer."""
    STORAGE = "storage"
    """A volume against its class's ceiling, or a disk busy."""
    NETWORK_BANDWIDTH = "network bandwidth"
    """A link's or an interface's bytes against its rate."""
    NETWORK_ROUND_TRIPS = ROUND_TRIPS
    """No hardware saturated, and most of each message's time was spent on a link's round trips."""
    SOFTWARE = "software"
    """No hardware saturated: pools, locks, serialisation."""
    GENERATOR = "generator"
    """The load generator stopped the search: a floor for the capacity, not the system's limit."""
    UNKNOWN = "unknown"
    """No SUT process was named, so resource use could not be attributed to it."""
    NOT_REACHED = "not reached"
    """A fixed load that pushed nothing to its limit (the limit names the busiest resource)."""

    @classmethod
    def of(cls, limit: Limit) -> LimitKind:
        """The kind of a limit as the finder returned it or results.json holds it."""
        coarse = limit.get("kind")
        if coarse in _NOT_THE_SYSTEMS:
            return _NOT_THE_SYSTEMS[str(coarse)]
        resource = limit.get("resource")
        if resource == ROUND_TRIPS:
            return cls.NETWORK_ROUND_TRIPS
        if coarse == "software":
            return cls.SOFTWARE
        scope = ResourceScope.of(resource)
        if coarse != "hardware" or scope is None:
            return cls.UNKNOWN
        if scope.kind == ScopeKind.CPU and scope != HOST_CPU and _one_thread(limit):
            return cls.CPU_THREAD
        return cls.of_resource(scope) or cls.UNKNOWN

    @classmethod
    def of_resource(cls, resource: ResourceScope | str | None) -> LimitKind | None:
        """The kind of limit a resource would be, whatever the stored kind says (a fixed load's
        busiest resource too); None for a name that is no resource (``software``)."""
        if resource == ROUND_TRIPS:
            return cls.NETWORK_ROUND_TRIPS
        scope = resource if isinstance(resource, ResourceScope) else ResourceScope.of(resource)
        if scope is None:
            return None
        if scope == HOST_CPU:
            return cls.HOST_CPU
        return _BY_SCOPE.get(scope.kind)

    @property
    def is_hardware(self) -> bool:
        """A resource that more or faster hardware raises."""
        return self in _HARDWARE

    @property
    def is_cpu(self) -> bool:
        return self in (LimitKind.HOST_CPU, LimitKind.CPU, LimitKind.CPU_THREAD)


def _one_thread(limit: Limit) -> bool:
    """Whether the limit's demand was its busiest thread's (the role's note in the demands)."""
    demands = (limit.get("evidence") or {}).get("demands") or []
    return any(
        d.get("resource") == limit.get("resource") and str(d.get("note", "")).startswith(BUSIEST_THREAD)
        for d in demands
    )


_NOT_THE_SYSTEMS = {
    "generator": LimitKind.GENERATOR,
    "unknown": LimitKind.UNKNOWN,
    "not reached": LimitKind.NOT_REACHED,
}
"""Stored kinds that name no limit of the system's."""
_BY_SCOPE = {
    ScopeKind.CPU: LimitKind.CPU,
    ScopeKind.MEMORY: LimitKind.MEMORY,
    ScopeKind.VOLUME: LimitKind.STORAGE,
    ScopeKind.DISK: LimitKind.STORAGE,
    ScopeKind.LINK: LimitKind.NETWORK_BANDWIDTH,
    ScopeKind.NET: LimitKind.NETWORK_BANDWIDTH,
}
_HARDWARE = frozenset(
    {
        LimitKind.HOST_CPU,
        LimitKind.CPU,
        LimitKind.CPU_THREAD,
        LimitKind.MEMORY,
        LimitKind.STORAGE,
        LimitKind.NETWORK_BANDWIDTH,
    }
)
