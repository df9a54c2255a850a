"""The system under test: how to start, stop and tell it is up, its roles, its own counters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from caplab.spec.fields import Seconds, Strict


class ReadySpec(Strict):
    """How to tell the SUT is up: an HTTP URL answering < 500, a TCP port accepting, or a command
    exiting 0."""

    url: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    host: str = "127.0.0.1"
    command: str | None = None
    timeout: Seconds = 30.0

    @model_validator(mode="after")
    def _one(self) -> ReadySpec:
        if sum(x is not None for x in (self.url, self.port, self.command)) != 1:
            raise ValueError("give exactly one of url, port or command")
        return self


def _ready(value: Any) -> Any:
    if isinstance(value, str):
        return {"url": value} if value.startswith(("http://", "https://")) else {"command": value}
    if isinstance(value, int) and not isinstance(value, bool):
        return {"port": value}
    return value


class RoleSpecModel(Strict):
    """A process group whose resources are attributed: by pid, command-line substring, cgroup,
    user or pidfile — with all their descendants, wherever they run (a daemonised server leaves the
    start command's tree: name it by its pidfile or user); ``profile`` names the hardware it runs
    on (a key of the study's ``profiles:``)."""

    pid: int | None = Field(default=None, ge=1)
    match: str | None = Field(default=None, pattern=r"\S")
    cgroup: str | None = Field(default=None, pattern=r"\S")
    user: str | None = Field(default=None, pattern=r"\S")
    """Every process of this user (name or uid) and their descendants."""
    pidfile: str | None = Field(default=None, pattern=r"\S")
    """A file whose first line is the role's main pid (``node0/postmaster.pid``), relative to the
    study's directory, read again at every sample: a restarted or promoted server is followed."""
    host: str | None = Field(default=None, pattern=r"\S")
    """A remote host of the study's ``hosts:``: the role is that host, measured at host level."""
    profile: str | None = Field(default=None, pattern=r"\S")
    machine: str | None = Field(default=None, pattern=r"\S")
    """Roles naming the same machine run on one instance of their (common) profile — one box
    whose CPU, memory and volumes they share, as ``consolidation``'s ``together`` places them —
    instead of each on a box of its own."""

    @model_validator(mode="after")
    def _one(self) -> RoleSpecModel:
        selectors = (self.pid, self.match, self.cgroup, self.user, self.pidfile, self.host)
        if sum(x is not None for x in selectors) != 1:
            raise ValueError("give exactly one of pid, match, cgroup, user, pidfile or host")
        if self.host is not None and self.profile is not None:
            raise ValueError("a role on a remote host runs on that host's hardware, not on a profile")
        return self


RESERVED_ROLES = ("host", "generator")


def _role_names(value: Any) -> Any:
    if isinstance(value, dict):
        for name in value:
            if name in RESERVED_ROLES or ":" in str(name) or not str(name).strip():
                raise ValueError(
                    f"role name {name!r} is reserved or invalid (not host, generator, or with ':')"
                )
    return value


_SERIES = r"^[A-Za-z_:][A-Za-z0-9_:]*$"
_FIGURE = r"^[A-Za-z_][A-Za-z0-9_]*$"
SeriesName = Annotated[str, Field(pattern=_SERIES)]


class MetricsSpec(Strict):
    """The SUT's own counters (Prometheus text format): figure name → series name."""

    url: str = Field(pattern=r"^https?://")
    rates: dict[Annotated[str, Field(pattern=_FIGURE)], SeriesName] = Field(default_factory=dict)
    gauges: dict[Annotated[str, Field(pattern=_FIGURE)], SeriesName] = Field(default_factory=dict)
    drain: SeriesName | None = None
    """A gauge of queued work that must fall to ``drain_below`` before each trial starts."""
    drain_below: float = Field(default=0.0, ge=0)
    drain_timeout: Seconds = 60.0

    @model_validator(mode="after")
    def _some(self) -> MetricsSpec:
        if not self.rates and not self.gauges:
            raise ValueError("name at least one series under rates: or gauges:")
        return self


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


PgUrl = Annotated[str, Field(pattern=r"^postgres(ql)?://")]


class SutSpec(Strict):
    start: str | None = None
    stop: str | None = None
    ready: Annotated[ReadySpec | None, BeforeValidator(_ready)] = None
    roles: Annotated[dict[str, RoleSpecModel], BeforeValidator(_role_names)] = Field(default_factory=dict)
    metrics: MetricsSpec | None = None
    profile: str | None = Field(default=None, pattern=r"\S")
    """The profile of every role that names none (of the SUT itself when it declares no roles)."""
    actions: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], Annotated[str, Field(pattern=r"\S")]
    ] = Field(default_factory=dict)
    """What this system can be made to do during a trial, by name (``switchover: "…"``): a
    system's own failover actions, which the study's ``actions:`` then name with ``do:``."""
    postgres: Annotated[
        list[Annotated[str, Field(pattern=r"^postgres(ql)?://")]], BeforeValidator(_listed)
    ] = Field(default_factory=list)
    """PostgreSQL nodes to sample (commits, WAL, replication lag): one URL per node."""

    def role_profiles(self) -> dict[str, str]:
        """``{role: profile name}`` for every role on a profile; without roles, the role ``sut``."""
        if not self.roles:
            return {"sut": self.profile} if self.profile else {}
        named = {name: role.profile or self.profile for name, role in self.roles.items()}
        return {name: profile for name, profile in named.items() if profile}
