"""What a resource is called: ``cpu:host``, ``cpu:transport+access``, ``volume:data``, ``link:db``.

The collectors name each scope they sample ``KIND:NAME`` and the limit analysis names the resources
it weighs the same way; those strings are what the store and results.json hold. A
``ResourceScope`` is such a name parsed, so that code asks a resource its kind instead of testing
its prefix, and formats back to the very string it was parsed from, so no stored document changes.
A few scopes have no kind (``host``, ``generator``, ``app``: one of each per trial) and a few
limits are not resources (``network round trips``, ``software``): ``ResourceScope.of`` returns
None for those.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ScopeKind(StrEnum):
    """The kinds of resource scope caplab samples and names."""

    ROLE = "role"
    """A role's processes: their CPU, memory, threads and throttling (``role:db``)."""
    CPU = "cpu"
    """A CPU as the limit analysis weighs it: a role's (``cpu:db``), the roles sharing one machine
    (``cpu:transport+access``), the whole host's (``cpu:host``) or one core's (``cpu:0``)."""
    MEMORY = "memory"
    """A role's memory against its profile's limit (``memory:access``)."""
    VOLUME = "volume"
    """A hardware profile's loop volume, by its label (``volume:data``, ``volume:db/log``)."""
    DISK = "disk"
    """One of the host's block devices (``disk:sda``)."""
    LINK = "link"
    """A role's emulated network link (``link:db``)."""
    NET = "net"
    """One of the host's network interfaces (``net:eth0``)."""
    PG = "pg"
    """A PostgreSQL node (``pg:primary``)."""
    PGDB = "pgdb"
    """One database of a PostgreSQL node."""
    NODE = "node"
    """A remote host's node_exporter."""


_KINDS = frozenset(k.value for k in ScopeKind)
STORAGE = frozenset({ScopeKind.VOLUME, ScopeKind.DISK})
NETWORK = frozenset({ScopeKind.LINK, ScopeKind.NET})


@dataclass(frozen=True)
class ResourceScope:
    """A resource's name: its kind and what it names (a role, a volume's label, a device)."""

    kind: ScopeKind
    name: str

    @classmethod
    def parse(cls, text: str) -> ResourceScope:
        """``cpu:host`` → ResourceScope(CPU, "host"); raises ValueError for anything that is not
        ``KIND:NAME`` with a kind caplab names (``host``, ``software``, ``gpu:0``, ``cpu:``)."""
        scope = cls.of(text)
        if scope is None:
            kinds = ", ".join(k.value for k in ScopeKind)
            raise ValueError(f"not a resource scope (KIND:NAME, with KIND one of {kinds}): {text!r}")
        return scope

    @classmethod
    def of(cls, text: str | None) -> ResourceScope | None:
        """The scope ``text`` names, or None when it names none (``host``, ``network round trips``,
        ``software``, no resource at all)."""
        kind, colon, name = (text or "").partition(":")
        if not colon or not name or kind not in _KINDS:
            return None
        return cls(ScopeKind(kind), name)

    def format(self) -> str:
        """The stored name: ``parse(s).format() == s``."""
        return f"{self.kind.value}:{self.name}"

    def __str__(self) -> str:
        return self.format()

    @property
    def parts(self) -> frozenset[str]:
        """The roles a machine's scope names (``cpu:transport+access``: both), or just its name."""
        return frozenset(self.name.split("+"))

    def same_as(self, other: ResourceScope) -> bool:
        """``cpu:transport+access`` is ``cpu:access+transport``: roles on one machine in any order."""
        return self.kind == other.kind and self.parts == other.parts

    @property
    def is_storage(self) -> bool:
        return self.kind in STORAGE

    @property
    def is_network(self) -> bool:
        return self.kind in NETWORK


HOST_CPU = ResourceScope(ScopeKind.CPU, "host")
"""The whole machine's CPU: everything on it, the generator included."""


def role_scope(role: str) -> str:
    """The scope a role's own processes are sampled under (``role:db``)."""
    return ResourceScope(ScopeKind.ROLE, role).format()
