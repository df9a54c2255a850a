"""The study file: YAML validated into typed models, with errors that name file, line and field.

A study declares a target, optionally how to start the system under test, factors whose product
is the test matrix, and the load. Any string may reference a factor as ``{name}``; each cell of
the matrix is substituted and validated on its own, so ``rate: "{rate}"`` is checked as a number
for every value the factor takes. Unknown ``{names}`` are left alone (``{seq}`` is the engine's).

    study.yaml:7: load.duraton: unknown field (did you mean duration?)
"""

from __future__ import annotations

import difflib
import itertools
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from caplab.analysis.cost import PricedRole, Prices, ProfilePrice
from caplab.profiles import LinkClass, Profile, VolumeClass, parse_rate, parse_size
from caplab.profiles.models import format_size
from caplab.profiles.placeholders import check_placeholders
from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S, parse_duration

Scalar = int | float | str | bool


class SpecError(Exception):
    """A problem in a study file, already formatted as ``file:line: field: message``."""


def _seconds(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    return value


Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Payload(Strict):
    """What every target has: a URL of its scheme and a request body or payload."""

    scheme: ClassVar[str]
    url: str
    also: list[str] = Field(default_factory=list)
    """More URLs of the same scheme, each sent the same request: they share the load round-robin
    (closed user i on URL i mod n, open arrivals in turn) and the result has a series per URL — a
    server's other listeners, e.g. an interface engine's channels, each on a port of its own."""
    body: str | None = None
    body_file: str | None = None
    template: bool = False

    @model_validator(mode="after")
    def _check(self) -> Self:
        for url in (self.url, *self.also):
            if not url.startswith(self.scheme):
                raise ValueError(
                    f"url must start with {self.scheme}"
                    if url == self.url
                    else f"also: {url!r} must start with {self.scheme}"
                )
        if self.body is not None and self.body_file is not None:
            raise ValueError("give body or body_file, not both")
        return self


class HttpTarget(_Payload):
    scheme: ClassVar[str] = "http://"
    method: str = "GET"
    headers: dict[str, str] = Field(default_factory=dict)


class TcpTarget(_Payload):
    scheme: ClassVar[str] = "tcp://"
    framing: Literal["line", "u32", "mllp"]


def _percent_fraction(value: Any) -> Any:
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100.0
    return value


DATABASE_INDEX = "{i}"
"""Where a database list's index goes in its URL (``…/ag_{i}``)."""


def spread(count: int, share: float) -> list[int]:
    """An evenly spread ``share`` of ``range(count)``: at least one when the share is above 0 and
    there is anything to take, none when it is 0 (5 % of 100 is 0, 20, 40, 60, 80)."""
    if count <= 0 or share <= 0:
        return []
    taken = min(count, max(1, round(count * share)))
    return [j * count // taken for j in range(taken)]


class DatabaseListSpec(Strict):
    """Many databases named by one URL: ``{i}`` in it runs over ``range(count)``; ``share`` keeps an
    evenly spread subset of them (the databases the load reaches), and ``loaded`` a share of those
    that carry ``weight`` times the load of the others (the seed's OLTP traffic on 5–10 % of the
    availability group's databases, the rest only probed)."""

    count: int = Field(ge=0)
    share: Annotated[float, BeforeValidator(_percent_fraction), Field(ge=0, le=1)] = 1.0
    loaded: Annotated[float, BeforeValidator(_percent_fraction), Field(ge=0, le=1)] = 0.0
    weight: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _matches_some(self) -> DatabaseListSpec:
        if not self.indices():
            raise ValueError(
                f"matches no database ({self.share:.0%} of {self.count}): the load needs at least one"
            )
        return self

    def indices(self) -> list[int]:
        """The databases in the list, by index."""
        return spread(self.count, self.share)

    def loaded_indices(self) -> list[int]:
        """The databases that carry the weighted load, evenly spread over the list."""
        listed = self.indices()
        return [listed[k] for k in spread(len(listed), self.loaded)]

    def targets(self, url: str) -> list[str]:
        """One URL per place in the load's round-robin: every listed database once, each loaded one
        ``weight`` times (users and arrivals are spread evenly over the places)."""
        loaded = set(self.loaded_indices())
        places = [url.replace(DATABASE_INDEX, str(i)) for i in self.indices()]
        extra = [url.replace(DATABASE_INDEX, str(i)) for i in self.indices() if i in loaded]
        return places + extra * (self.weight - 1)


class PostgresTargetSpec(Strict):
    """A PostgreSQL database (libpq URL, several hosts allowed) running a transaction script:
    pgbench's ``tpcb`` or ``select-only``, or a pgbench script file (relative to the study). With
    ``databases:``, the URL names many (``…/ag_{i}``) and the load is spread over them."""

    url: str = Field(pattern=r"^postgres(ql)?://")
    databases: DatabaseListSpec | None = None
    workload: Literal["tpcb", "select-only"] | None = None
    sql_file: str | None = None
    passfile: str | None = None
    """A libpq password file (``pgpass``) to find the password in, relative to the study."""
    ledger: bool = False
    """Each transaction also writes a row keyed by its sequence number to ``caplab_ledger``, counted
    after every trial: acknowledged transactions a failover lost become a measured number."""

    @model_validator(mode="after")
    def _one_script(self) -> PostgresTargetSpec:
        if self.workload is not None and self.sql_file is not None:
            raise ValueError("give workload: or sql_file:, not both")
        if (self.databases is not None) != (DATABASE_INDEX in self.url):
            raise ValueError(
                "a database list needs {i} in the url (…/ag_{i}), and {i} in the url needs databases:"
            )
        return self

    def urls(self) -> list[str]:
        """Each database of the target once, in order (one: the URL itself)."""
        if self.databases is None:
            return [self.url]
        return [self.url.replace(DATABASE_INDEX, str(i)) for i in self.databases.indices()]

    def places(self) -> list[str]:
        """The load's round-robin over the databases (see `DatabaseListSpec.targets`)."""
        return [self.url] if self.databases is None else self.databases.targets(self.url)


def _size(value: Any) -> Any:
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return parse_size(value, "size")
        except ValueError:
            raise ValueError(f"{value!r} is not a size (examples: 256M, 4G, 1048576)") from None
    return value


class MailTargetSpec(Strict):
    """A mail system: SMTP sends (``smtp:``, ``smtp://`` or ``smtps://``) and IMAP reads (``imap:``,
    ``imap://`` or ``imaps://``), the options `caplab load` takes for them. A plain load drives one
    of the two; a usage profile's actions name theirs with ``target:`` (one engine plan per
    protocol, run side by side)."""

    smtp: str | None = Field(default=None, pattern=r"^smtps?://")
    imap: str | None = Field(default=None, pattern=r"^imaps?://")
    password_file: str | None = None
    """``user:password`` lines (the mail system's ``DIR/passwords``), relative to the study."""
    mailboxes: int = Field(default=1, ge=1)
    """Users ``user1…userN`` the requests cycle over."""
    user: str = "user{user}"
    rcpt: str = "user{user}@caplab.test"
    message_size: Annotated[int, BeforeValidator(_size), Field(ge=1)] | None = None
    fetch_last: int = Field(default=10, ge=0)
    starttls: bool | None = None
    session_per_action: bool | list[Literal["smtp", "imap"]] = False
    """End each session after its request (QUIT/LOGOUT): all, or only these protocols' — ``[smtp]``:
    users connect to send, as mail clients do, and keep their IMAP session."""
    insecure: bool = False
    """Take the system's certificate unverified (its self-signed one)."""

    @model_validator(mode="after")
    def _some(self) -> MailTargetSpec:
        if self.smtp is None and self.imap is None:
            raise ValueError("give smtp: (sends), imap: (reads) or both")
        return self

    def driven(self, usage: UsageSpec | None) -> Literal["smtp", "imap"]:
        """The protocol a load drives first: the one given, or the first a usage profile's actions
        (those with a rate) name — the others run beside it; ValueError says what does not fit."""
        protocols: tuple[Literal["smtp"], Literal["imap"]] = ("smtp", "imap")
        given = [p for p in protocols if getattr(self, p) is not None]
        if usage is None:
            if len(given) > 1:
                raise ValueError(
                    "a load without a usage profile drives one protocol: give smtp: or imap:, or a usage "
                    "profile whose actions name theirs (target: smtp)"
                )
            return "smtp" if given == ["smtp"] else "imap"
        active = {n: a for n, a in usage.actions.items() if a.rate_per_hour > 0}
        named = {a.target for a in active.values()}
        if None in named and len(given) > 1:
            unnamed = next(n for n, a in active.items() if a.target is None)
            raise ValueError(f"action {unnamed}: name its target (smtp or imap): the mail target gives both")
        missing = sorted({t for t in named if t is not None} - set(given))
        if missing:
            raise ValueError(f"actions use {missing[0]}, which target.mail does not give")
        first = next(iter(active.values())).target
        return first or given[0]


class TargetSpec(Strict):
    http: HttpTarget | None = None
    tcp: TcpTarget | None = None
    postgres: PostgresTargetSpec | None = None
    mail: MailTargetSpec | None = None

    @model_validator(mode="after")
    def _one(self) -> TargetSpec:
        if sum(t is not None for t in (self.http, self.tcp, self.postgres, self.mail)) != 1:
            raise ValueError("give exactly one of http:, tcp:, postgres: or mail:")
        return self


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
    """A process group whose resources are attributed: by pid, command-line substring or cgroup;
    ``profile`` names the hardware it runs on (a key of the study's ``profiles:``)."""

    pid: int | None = Field(default=None, ge=1)
    match: str | None = Field(default=None, pattern=r"\S")
    cgroup: str | None = Field(default=None, pattern=r"\S")
    host: str | None = Field(default=None, pattern=r"\S")
    """A remote host of the study's ``hosts:``: the role is that host, measured at host level."""
    profile: str | None = Field(default=None, pattern=r"\S")
    machine: str | None = Field(default=None, pattern=r"\S")
    """Roles naming the same machine run on one instance of their (common) profile — one box
    whose CPU, memory and volumes they share, as ``consolidation``'s ``together`` places them —
    instead of each on a box of its own."""

    @model_validator(mode="after")
    def _one(self) -> RoleSpecModel:
        if sum(x is not None for x in (self.pid, self.match, self.cgroup, self.host)) != 1:
            raise ValueError("give exactly one of pid, match, cgroup or host")
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


ActionName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]


class UsageActionSpec(Strict):
    """One action of a usage profile: how often each user does it (``per_hour`` or ``per_day``,
    the paper's messages per user per day) and the request it sends, in the target's fields."""

    per_hour: float | None = Field(default=None, ge=0)
    per_day: float | None = Field(default=None, ge=0)
    method: str = Field(default="GET", pattern=r"^[A-Za-z]+$")
    path: str | None = Field(default=None, pattern=r"^/")
    """HTTP: the path and query (default: the target URL's)."""
    headers: dict[str, str] = Field(default_factory=dict)
    body: str | None = None
    body_file: str | None = None
    """Relative to the study (or usage) file."""
    template: bool = False
    target: Literal["smtp", "imap"] | None = None
    """A mail target's protocol this action uses (``target.mail``'s ``smtp:`` or ``imap:``)."""

    @model_validator(mode="after")
    def _one_rate(self) -> UsageActionSpec:
        if (self.per_hour is None) == (self.per_day is None):
            raise ValueError("give per_hour or per_day (actions per user), one of them")
        if self.body is not None and self.body_file is not None:
            raise ValueError("give body or body_file, not both")
        return self

    @property
    def rate_per_hour(self) -> float:
        """Actions per user-hour, whichever way the rate was given."""
        return self.per_hour if self.per_hour is not None else (self.per_day or 0.0) / 24.0


def _some_rate(actions: dict[str, UsageActionSpec]) -> dict[str, UsageActionSpec]:
    if not sum(a.rate_per_hour for a in actions.values()) > 0:
        raise ValueError("the rates sum to nothing: a user would never act (give an action a rate above 0)")
    return actions


class UsageSpec(Strict):
    """A usage profile: what each user does and how often. caplab runs ``users`` of them as a
    closed population with exponential think time, 3600 s / (actions per user-hour), and a mix of
    the actions weighted by their rates."""

    actions: Annotated[dict[ActionName, UsageActionSpec], AfterValidator(_some_rate)] = Field(min_length=1)

    @property
    def actions_per_hour(self) -> float:
        """Every action's rate summed: what one user does in an hour."""
        return sum(a.rate_per_hour for a in self.actions.values())

    def missing_body_file(self, directory: Path) -> tuple[str, Path] | None:
        """The first action whose ``body_file`` is not a file under ``directory``, and that file."""
        for name, action in self.actions.items():
            if action.body_file is not None and not (directory / action.body_file).is_file():
                return name, directory / action.body_file
        return None


class LoadSection(Strict):
    model: Literal["open", "closed"] | None = None
    rate: float | None = Field(default=None, gt=0)
    ramp_to: float | None = Field(default=None, ge=0)
    schedule: Literal["constant", "poisson"] = "constant"
    users: int | None = Field(default=None, ge=1)
    think: Seconds = 0.0
    think_dist: Literal["constant", "exponential"] = "constant"
    logon: Seconds = 0.0
    """Closed model: the users' first requests fall evenly over this long, inside the warm-up, so
    sessions they keep (a mail login, a TLS connection) are open before measuring; without it each
    user first waits a think time, and with minutes of think many still log on while measured."""
    duration: Annotated[float, BeforeValidator(_seconds), Field(gt=0)] = 30.0
    warmup: Seconds = 0.0
    repeat: int = Field(default=1, ge=1)
    threads: int | None = Field(default=None, ge=1)
    connections: int | None = Field(default=None, ge=1)
    timeout: Seconds = DEFAULT_TIMEOUT_S
    interval: Annotated[float, BeforeValidator(_seconds), Field(ge=0.05, le=60)] = DEFAULT_INTERVAL_S
    """The interval series' resolution (and the collectors' sampling): a failover's recovery is
    read from it, so finer than the default 1 s there."""
    per_target: bool = False
    """``users`` or ``rate`` are per place in the target's list (a database list: per database,
    each loaded one counted ``weight`` times), so one study file serves every list length."""
    usage: UsageSpec | None = None
    """A usage profile: ``users`` each doing its actions at their rates (the closed model)."""

    @model_validator(mode="after")
    def _needs_load(self, info: ValidationInfo) -> LoadSection:
        searching = bool(info.context and info.context.get("search"))
        if not searching and self.open_model and self.rate is None:
            raise ValueError("needs a rate (open model), users (closed model), or a search: section")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> LoadSection:
        model = self.model or ("closed" if self.users is not None or self.usage is not None else "open")
        if self.usage is not None and (model == "open" or self.think):
            raise ValueError(
                "a usage profile drives users (closed model) and sets their think time from its "
                "rates: no rate, model: open or think with it"
            )
        if model == "open" and self.users is not None:
            raise ValueError("give rate (open model) or users (closed model), not both")
        if model == "closed" and self.rate is not None:
            raise ValueError("the closed model takes users, not rate")
        if self.logon and model == "open":
            raise ValueError("logon: spreads users' first requests: the closed model's (users), not a rate")
        if self.logon > self.warmup:
            raise ValueError(
                "logon: must fall within the warm-up (logons are not measured): give warmup: as long"
            )
        return self

    @property
    def open_model(self) -> bool:
        closed = self.users is not None or self.usage is not None
        return (self.model or ("closed" if closed else "open")) == "open"


class RecoverySpec(Strict):
    """What a successful failover is: every database taking writes again ``within`` the recovery
    SLO of the fault, and — where the replication mode promises it (``lossless``: synchronous) — no
    acknowledged transaction lost. Each trial is judged; the cell reports k of K."""

    within: Annotated[float, BeforeValidator(_seconds), Field(gt=0)]
    lossless: bool = True


def _condition(value: Any) -> Any:
    from caplab.analysis.trigger import parse_condition

    if isinstance(value, str):
        parse_condition(value)  # raises TriggerError (a ValueError) naming what is wrong
    return value


class ActionSpec(Strict):
    """Something done to the system during each trial of a fixed load: one of the system's own
    actions (``do: switchover``) or any command (``run: "kill -9 …"``, in the study's directory),
    fired ``at`` seconds after the load starts (warm-up included), or ``when`` a condition first
    holds on an interval (``p99 > 50ms``, ``replay_lag_ms > 100``), or ``after: steady``
    (analysis/trigger.py)."""

    at: Annotated[float, BeforeValidator(_seconds), Field(ge=0)] | None = None
    when: Annotated[str | None, BeforeValidator(_condition)] = None
    after: Literal["steady"] | None = None
    do: str | None = Field(default=None, pattern=r"\S")
    run: str | None = Field(default=None, pattern=r"\S")
    name: str | None = Field(default=None, pattern=r"\S")
    timeout: Annotated[float, BeforeValidator(_seconds), Field(gt=0)] = 120.0

    @model_validator(mode="after")
    def _one(self) -> ActionSpec:
        if (self.do is None) == (self.run is None):
            raise ValueError("give do: (one of the system's actions) or run: (a command), one of them")
        if sum(x is not None for x in (self.at, self.when, self.after)) != 1:
            raise ValueError("give at: (a time), when: (a condition) or after: steady, one of them")
        return self

    @property
    def label(self) -> str:
        return self.name or self.do or (self.run or "").split()[0]


def _slo_text(value: Any) -> Any:
    from caplab.analysis.slo import parse_slo

    if isinstance(value, str):
        parse_slo(value)  # raises SloError (a ValueError) naming what is wrong
    return value


SloText = Annotated[str, BeforeValidator(_slo_text)]


class SearchSpec(Strict):
    """Find each cell's capacity instead of running a fixed load: the rate (open model) or the
    users (closed model) at which the SLO holds."""

    slo: list[SloText] = Field(default_factory=list)
    precision: Annotated[float, BeforeValidator(_percent_fraction), Field(gt=0, le=0.5)] = 0.05
    trial: Seconds = 3.0
    confirm: Seconds | None = None
    """Confirmation trial length; default: load.duration."""
    repeats: int = Field(default=3, ge=1, le=10)
    start: float | None = Field(default=None, gt=0)
    max: float | None = Field(default=None, gt=0)


class GoalSpec(Strict):
    """What the report sizes for: the load to carry, and the headroom to keep above it — a rate
    (req/s), or ``users`` for a study that searches the most users (the Exchange paper's "users a
    server carries"). A job study is rated by one phase's items a second (``phase``, by default its
    last): its ``rate`` is then in items/s, and may be left out to rate the configurations without
    sizing for a goal."""

    rate: float | None = Field(default=None, gt=0)
    users: int | None = Field(default=None, gt=0)
    phase: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    headroom: Annotated[float, BeforeValidator(_percent_fraction), Field(ge=0, lt=1)] = 0.25
    for_each: list[str] = Field(default_factory=list)
    """Factors that are workloads to serve, not options to choose (the paper's messaging and
    orchestration scenarios): the report recommends a configuration for each of their values."""

    @model_validator(mode="after")
    def _rate_or_phase(self) -> GoalSpec:
        if self.rate is not None and self.users is not None:
            raise ValueError("a goal is a rate or a number of users, not both")
        if self.rate is None and self.users is None and self.phase is None:
            raise ValueError("a goal needs a rate (req/s, or for a job the items/s of its phase) or users")
        return self


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


Size = Annotated[int, BeforeValidator(_size)]
Iops = Annotated[int, Field(gt=0)]


class ProfileSpec(Strict):
    """One hardware profile: cores (a CPU quota, ``scale.cpu`` host cores each), memory, named
    volumes of a class in ``volumes:`` and a link of a class in ``links:``."""

    cpus: float | None = Field(default=None, gt=0)
    cpuset: str | None = Field(default=None, pattern=r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
    memory: Annotated[int, BeforeValidator(_size), Field(ge=4 << 20)] | None = None
    swap: bool = False
    volumes: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")], str] = Field(default_factory=dict)
    link: str | None = None


class VolumeSpec(Strict):
    """A class of disk: an ext4 image of ``size`` on a loop device, throttled per second."""

    size: Annotated[int, BeforeValidator(_size), Field(ge=16 << 20)]
    read_iops: Iops | None = None
    write_iops: Iops | None = None
    read_bw: Size | None = None
    write_bw: Size | None = None
    dwpd: float | None = Field(default=None, gt=0)
    years: float | None = Field(default=None, gt=0)
    tbw: float | None = Field(default=None, gt=0)


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


class ProfilePriceSpec(Strict):
    base: float = Field(default=0.0, ge=0)
    per_cpu: float = Field(default=0.0, ge=0)
    per_gb: float = Field(default=0.0, ge=0)


def _price(value: Any) -> Any:
    return {"base": value} if isinstance(value, int | float) and not isinstance(value, bool) else value


class ConfigurationPriceSpec(Strict):
    when: dict[str, Scalar] = Field(default_factory=dict)
    """Factor values the price applies to (empty: every configuration)."""
    price: float = Field(ge=0)


class CostSpec(Strict):
    """Prices: per profile (a number, or base + per_cpu + per_gb), per volume class, per link class,
    or per whole configuration matched on factor values; a purchase or per hour."""

    currency: str = "USD"
    basis: Literal["purchase", "hour"] = "purchase"
    profiles: dict[str, Annotated[ProfilePriceSpec, BeforeValidator(_price)]] = Field(default_factory=dict)
    volumes: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    links: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    configurations: list[ConfigurationPriceSpec] = Field(default_factory=list)

    def prices(self) -> Prices:
        return Prices(
            self.currency,
            self.basis,
            {n: ProfilePrice(p.base, p.per_cpu, p.per_gb) for n, p in self.profiles.items()},
            dict(self.volumes),
            dict(self.links),
            [(dict(c.when), c.price) for c in self.configurations],
        )


class ScaleSpec(Strict):
    cpu: float = Field(default=1.0, gt=0)
    """Host cores per profile core: 0.25 lets two host cores carry an 8-core profile."""


class CounterItems(Strict):
    """A phase's items counted by the system itself: how much its counter (a series of
    ``sut.metrics``' endpoint, summed over labels) rose over the phase."""

    counter: SeriesName


class PhaseSpec(Strict):
    """One timed step of a batch job: a command, and how many items it does (for items/s): a number,
    or ``{counter: SERIES}`` read from the system's own counter."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    run: str = Field(pattern=r"\S")
    items: Annotated[int, Field(ge=1)] | CounterItems | None = None
    timeout: Annotated[float, BeforeValidator(_seconds), Field(gt=0)] = 3600.0


class JobSpec(Strict):
    """A batch job instead of a request load (the MIIS paper's staging and synchronisation): before
    each repeat ``reset`` then ``prepare`` (untimed), then each phase timed with the resources
    sampled on the same clock as a load trial."""

    reset: str | None = Field(default=None, pattern=r"\S")
    prepare: str | None = Field(default=None, pattern=r"\S")
    phases: list[PhaseSpec] = Field(min_length=1)
    repeat: int = Field(default=1, ge=1, le=20)
    interval: Annotated[float, BeforeValidator(_seconds), Field(ge=0.1, le=60)] = DEFAULT_INTERVAL_S
    """How often resources are sampled while a phase runs."""
    role: str | None = Field(default=None, pattern=r"\S")
    """The role (of ``sut.roles``) whose profile the job's commands run on, from their first
    instruction: its volumes' throttles then apply to every write the job makes."""

    @model_validator(mode="after")
    def _unique(self) -> JobSpec:
        names = [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise ValueError(f"phase names must differ (got {', '.join(names)})")
        return self


class StudyConfig(Strict):
    """One cell's fully substituted configuration."""

    name: str = Field(min_length=1)
    description: str | None = None
    target: TargetSpec | None
    """Required (``None`` only for a job study, which sends no requests)."""
    sut: SutSpec | None = None
    load: LoadSection | None
    """Required, like ``target``, unless the study is a job."""
    job: JobSpec | None = None
    slo: list[SloText] = Field(default_factory=list)
    search: SearchSpec | None = None
    goal: GoalSpec | None = None
    storage_baseline: StorageBaselineSpec | None = None
    cost: CostSpec | None = None
    profiles: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], ProfileSpec] = Field(
        default_factory=dict
    )
    scale: ScaleSpec = Field(default_factory=ScaleSpec)
    volumes: dict[str, VolumeSpec] = Field(default_factory=dict)
    links: dict[str, LinkSpec] = Field(default_factory=dict)
    hosts: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], Annotated[str, Field(pattern=r"^https?://")]
    ] = Field(default_factory=dict)
    """Remote hosts by name, each a node_exporter's metrics URL: their CPU, memory, disks and network
    on the load's clock (``node:NAME``); roles name one with ``host:``."""
    actions: list[ActionSpec] = Field(default_factory=list)
    """Faults and role changes during each trial; how the load recovered is measured from the
    interval series (a fixed load only: a search's trials must be alike)."""
    recovery: RecoverySpec | None = None
    """The recovery SLO each trial's failover is judged by (with ``actions:``)."""
    consolidation: ConsolidationSpec | None = None
    paper: dict[str, Any] | None = None
    """A seed paper's own figures, to be shown beside the study's (labelled as its hardware)."""
    placement: Literal["apart", "together"] | None = None
    """The cell's placement when the study has ``consolidation:`` (a factor caplab adds)."""
    replicates: int = Field(default=1, ge=1, le=20)
    """How many times each cell's capacity is searched, each with a fresh start of the system: the
    cell's interval comes from these, since runs vary more than trials within one run."""
    cluster: str | None = Field(default=None, pattern=r"^(local|ray://\S+)$")
    """Every trial's load on load agents of a Ray cluster (``ray://HEAD:10001``, or ``local``: a
    Ray started on this machine for the run), the results merged; ``caplab run --cluster``
    overrides it."""
    agents: int | None = Field(default=None, ge=1, le=256)
    """How many load agents share each trial's load (with ``cluster:``)."""

    def hardware(self) -> dict[str, Profile]:
        """``{role: Profile}`` for every role the SUT puts on a profile (checked at load time)."""
        volume_classes = {n: VolumeClass(**v.model_dump()) for n, v in self.volumes.items()}
        link_classes = {n: LinkClass(v.rate, v.mtu, v.rtt * 1000.0) for n, v in self.links.items()}
        out: dict[str, Profile] = {}
        for role, name in self.role_profiles().items():
            p = self.profiles[name]
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
            )
        return out

    @model_validator(mode="before")
    @classmethod
    def _job_sends_no_load(cls, data: Any) -> Any:
        """A job study has no target or load: they are None, not missing, for it alone."""
        if isinstance(data, dict) and data.get("job") is not None:
            given = [k for k in ("target", "load") if data.get(k) is not None]
            if given:
                raise ValueError(f"a job: study sends no requests: leave out {' and '.join(given)}:")
            return {"target": None, "load": None} | data
        return data

    @model_validator(mode="after")
    def _load_or_job(self) -> StudyConfig:
        if self.job is None and (self.target is None or self.load is None):
            raise ValueError("target: and load: are required (or a job: section, for a batch job)")
        if self.job is not None and (self.search is not None or self.actions):
            raise ValueError("a job: study runs its phases: no search: or actions: with it")
        if self.job is not None and self.cluster is not None:
            raise ValueError("a job: study sends no load: no cluster: for it")
        if self.agents is not None and self.cluster is None:
            raise ValueError("agents: needs cluster: (ray://HEAD:10001 or local)")
        return self

    @property
    def requests(self) -> tuple[TargetSpec, LoadSection]:
        """The target and load of a study that sends requests (every study but a job)."""
        if self.target is None or self.load is None:
            raise ValueError("a job study sends no requests")
        return self.target, self.load

    def role_profiles(self) -> dict[str, str]:
        """``{role: profile name}``: the SUT's own, or the consolidation's for the cell's placement."""
        c = self.consolidation
        if c is not None and self.placement == "apart":
            return dict(c.apart)
        if c is not None and self.placement == "together":
            return {role: c.together for role in c.apart}
        return self.sut.role_profiles() if self.sut else {}

    def shared_machines(self) -> dict[str, str]:
        """Role → machine for roles sharing one profile's hardware: consolidation's together, or
        the roles' own ``machine:``."""
        c = self.consolidation
        if c is not None:
            return {role: "together" for role in c.apart} if self.placement == "together" else {}
        roles = self.sut.roles if self.sut else {}
        return {name: role.machine for name, role in roles.items() if role.machine is not None}

    def priced_roles(self) -> list[PricedRole]:
        """Each machine the roles run on as the cost analysis prices it (cores in profile CPUs):
        a role's own profile, or once for the roles that share one machine (``transport+access``)."""
        machines = self.shared_machines()
        on: dict[str, tuple[list[str], str]] = {}
        for role, name in self.role_profiles().items():
            on.setdefault(machines.get(role, f"role:{role}"), ([], name))[0].append(role)
        out = []
        for roles, name in on.values():
            p = self.profiles[name]
            memory = p.memory / 2**30 if p.memory is not None else None
            out.append(PricedRole("+".join(roles), name, p.cpus, memory, tuple(p.volumes.values()), p.link))
        return out

    def volume_ratings(self) -> dict[str, tuple[str, VolumeSpec]]:
        """``{volume name: (class, its spec)}`` over the roles' profiles, for endurance."""
        return {
            volume: (vclass, self.volumes[vclass])
            for name in set(self.role_profiles().values())
            for volume, vclass in self.profiles[name].volumes.items()
            if vclass in self.volumes
        }

    @property
    def slos(self) -> list[str]:
        """The SLO: top-level ``slo:`` and ``search.slo`` together."""
        return [*self.slo, *(self.search.slo if self.search else [])]


@dataclass(frozen=True)
class Cell:
    index: int
    factors: dict[str, Scalar]
    config: StudyConfig


@dataclass(frozen=True)
class Study:
    path: Path
    text: str
    name: str
    factor_names: list[str]
    cells: list[Cell]

    @property
    def directory(self) -> Path:
        return self.path.parent


# -- line numbers ------------------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def _line_map(node: yaml.Node, path: Path_ = (), out: dict[Path_, int] | None = None) -> dict[Path_, int]:
    """Maps each key path in the YAML document to the 1-based line where it appears."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value
            out[(*path, k)] = key.start_mark.line + 1
            _line_map(value, (*path, k), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), out)
    return out


def _line_of(lines: dict[Path_, int], loc: Path_) -> int:
    while loc not in lines and loc:
        loc = loc[:-1]
    return lines.get(loc, 1)


# -- factors ------------------------------------------------------------------------------------

_REF = re.compile(r"\{(\w+)\}")


def _with_placement(factors: Any, path: Path, lines: dict[Path_, int]) -> Any:
    """A consolidation study's factors with ``placement: [apart, together]`` added."""
    factors = dict(factors) if isinstance(factors, dict) else {} if factors is None else factors
    if isinstance(factors, dict) and "placement" in factors:
        line = lines.get(("factors", "placement"), 1)
        raise SpecError(f"{path}:{line}: factors.placement: consolidation: adds this factor itself")
    if isinstance(factors, dict):
        factors["placement"] = ["apart", "together"]
    return factors


def _matrix(factors: Any, where: str) -> list[dict[str, Scalar]]:
    """The cells: the product of each factor's values, a ``zip:`` group moving together."""
    if factors is None:
        return [{}]
    if not isinstance(factors, dict):
        raise ValueError(f"{where}: must be a mapping of factor name to a list of values")
    dims: list[list[dict[str, Scalar]]] = []
    for name, values in factors.items():
        if name == "zip":
            dims.append(_zip_group(values, f"{where}.zip"))
            continue
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.{name}: must be a non-empty list of values")
        _check_scalars(values, f"{where}.{name}")
        dims.append([{name: v} for v in values])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*dims)]


def _zip_group(group: Any, where: str) -> list[dict[str, Scalar]]:
    if not isinstance(group, dict) or not group:
        raise ValueError(f"{where}: must map factor names to lists of equal length")
    lengths = {name: len(v) if isinstance(v, list) else -1 for name, v in group.items()}
    if min(lengths.values()) < 1 or len(set(lengths.values())) != 1:
        raise ValueError(f"{where}: lists must be non-empty and of equal length (got {lengths})")
    for name, values in group.items():
        _check_scalars(values, f"{where}.{name}")
    names = list(group)
    return [dict(zip(names, row, strict=True)) for row in zip(*(group[n] for n in names), strict=True)]


def _check_scalars(values: list[Any], where: str) -> None:
    for v in values:
        if not isinstance(v, Scalar):
            raise ValueError(f"{where}: values must be numbers or strings, got {v!r}")


def substitute(value: Any, factors: dict[str, Scalar]) -> Any:
    """Replaces ``{factor}`` references; a string that is only a reference takes the factor's type."""
    if isinstance(value, str):
        whole = _REF.fullmatch(value)
        if whole and whole.group(1) in factors:
            return factors[whole.group(1)]
        return _REF.sub(lambda m: str(factors[m.group(1)]) if m.group(1) in factors else m.group(0), value)
    if isinstance(value, dict):
        return {k: substitute(v, factors) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, factors) for v in value]
    return value


# -- loading ------------------------------------------------------------------------------------


def _suggest(name: str, model_fields: list[str]) -> str:
    close = difflib.get_close_matches(name, model_fields, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _fields_at(loc: Path_, root: type[BaseModel] = StudyConfig) -> list[str]:
    """Field names valid at a location, for did-you-mean suggestions."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        if model is None or not isinstance(part, str):
            continue
        field = model.model_fields.get(part)
        if field is None:
            continue  # a mapping key (a role's name) or a list index: the model is unchanged
        model = _model_of(field.annotation)
    if model is None:
        return []
    names = list(model.model_fields)
    return [*names, "factors"] if model is StudyConfig else names


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _raw_at(data: Any, loc: Path_) -> Any:
    """The raw YAML value at a validation error's location, or None."""
    for part in loc:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if not (in_dict or in_list):
            return None
        data = data[part]
    return data


_TYPE_TAGS = frozenset(
    {"int", "float", "str", "bool", "none", "list", "dict"}
    | {
        cls.__name__
        for cls in (
            HttpTarget,
            TcpTarget,
            TargetSpec,
            ReadySpec,
            RoleSpecModel,
            SutSpec,
            LoadSection,
            ProfileSpec,
            VolumeSpec,
            LinkSpec,
            ScaleSpec,
        )
    }
)


def _format_error(
    path: Path,
    lines: dict[Path_, int],
    err: Any,
    data: Any,
    cell: dict[str, Scalar],
    root: type[BaseModel] = StudyConfig,
) -> str:
    loc: Path_ = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    # pydantic puts union members' type names ("ReadySpec", "int") into loc; drop those, not keys.
    loc = tuple(p for p in loc if not (isinstance(p, str) and p in _TYPE_TAGS))
    field = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        message = f"unknown field{_suggest(str(loc[-1]), _fields_at(loc, root))}"
    elif err["type"] == "missing":
        message = "required field is missing"
    else:
        message = str(err["msg"]).removeprefix("Value error, ")
        if "input" in err and isinstance(err["input"], str) and _REF.search(err["input"]):
            message += f" (got {err['input']!r}: is the factor name right?)"
    raw = _raw_at(data, loc)
    refers = isinstance(raw, str) and any(m.group(1) in cell for m in _REF.finditer(raw))
    where = f" (in the cell where {', '.join(f'{k}={v}' for k, v in cell.items())})" if refers else ""
    return f"{path}:{_line_of(lines, loc)}: {field}: {message}{where}"


def _check_files(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """A body_file must exist (relative to the study file), so a typo fails now, not mid-study."""
    for kind in ("http", "tcp"):
        target = getattr(config.target, kind) if config.target else None
        if target is not None and target.body_file is not None:
            file = path.parent / target.body_file
            if not file.is_file():
                loc: Path_ = ("target", kind, "body_file")
                raise SpecError(
                    f"{path}:{_line_of(lines, loc)}: target.{kind}.body_file: no such file: {file}"
                )
    pg = config.target.postgres if config.target else None
    if pg is not None and pg.sql_file is not None and not (path.parent / pg.sql_file).is_file():
        loc = ("target", "postgres", "sql_file")
        file = path.parent / pg.sql_file
        raise SpecError(f"{path}:{_line_of(lines, loc)}: target.postgres.sql_file: no such file: {file}")


def _check_usage(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """A usage profile drives an HTTP, TCP or mail target (one protocol of it), and its actions'
    body files exist; a mail target without one drives one protocol too."""
    usage = config.load.usage if config.load else None
    mail = config.target.mail if config.target else None
    if usage is None and mail is not None:
        try:
            mail.driven(None)
        except ValueError as e:
            raise SpecError(f"{path}:{_line_of(lines, ('target', 'mail'))}: target.mail: {e}") from e
    if usage is None:
        return
    if config.target is not None and config.target.postgres is not None:
        line = _line_of(lines, ("load", "usage"))
        raise SpecError(f"{path}:{line}: load.usage: usage profiles drive http: and tcp: targets")
    target = config.target.http or config.target.tcp if config.target else None
    http = config.target.http if config.target else None
    request = target is not None and (target.body, target.body_file, target.template) != (None, None, False)
    if request or (http is not None and (http.headers or http.method.upper() != "GET")):
        line = _line_of(lines, ("load", "usage"))
        raise SpecError(
            f"{path}:{line}: load.usage: each action gives its own request (method, path, headers, "
            "body): leave them out of target:"
        )
    mail = config.target.mail if config.target else None
    named = [n for n, a in usage.actions.items() if a.target is not None]
    if mail is None and named:
        line = _line_of(lines, ("load", "usage", "actions", named[0], "target"))
        raise SpecError(
            f"{path}:{line}: load.usage.actions.{named[0]}.target: names a protocol of target.mail, "
            "which this study's target is not"
        )
    if mail is not None:
        try:
            mail.driven(usage)
        except ValueError as e:
            raise SpecError(f"{path}:{_line_of(lines, ('load', 'usage'))}: load.usage: {e}") from e
    missing = usage.missing_body_file(path.parent)
    if missing is not None:
        loc: Path_ = ("load", "usage", "actions", missing[0], "body_file")
        field = f"load.usage.actions.{missing[0]}.body_file"
        raise SpecError(f"{path}:{_line_of(lines, loc)}: {field}: no such file: {missing[1]}")


def load_usage(path: str | Path) -> UsageSpec:
    """Reads a usage profile file (``caplab load --usage``: the shape of a study's ``load.usage``,
    ``actions:`` at the top); raises SpecError with ``file:line: field: message``."""
    path = Path(path)
    try:
        text = path.read_text()
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from e
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 1
        raise SpecError(f"{path}:{line}: YAML syntax error: {e.problem}") from e
    if not isinstance(data, dict) or node is None:
        raise SpecError(f"{path}:1: a usage profile must be a YAML mapping (actions: NAME: {{per_hour: …}})")
    lines = _line_map(node)
    try:
        usage = UsageSpec.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        first = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        raise SpecError(_format_error(path, lines, first, data, {}, UsageSpec)) from e
    missing = usage.missing_body_file(path.parent)
    if missing is not None:
        line = _line_of(lines, ("actions", missing[0], "body_file"))
        raise SpecError(f"{path}:{line}: actions.{missing[0]}.body_file: no such file: {missing[1]}")
    return usage


def _check_hosts(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """A role's ``host:`` names one of the study's ``hosts:``."""
    for name, role in (config.sut.roles if config.sut else {}).items():
        if role.host is not None and role.host not in config.hosts:
            known = ", ".join(sorted(config.hosts)) or "none: add a hosts: section"
            line = _line_of(lines, ("sut", "roles", name, "host"))
            raise SpecError(
                f"{path}:{line}: sut.roles.{name}.host: unknown host {role.host!r} (hosts: {known})"
            )


def _check_actions(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """Actions run during a fixed load, within it, and name actions the system declares."""
    declared = config.sut.actions if config.sut else {}
    if config.load is None:
        return  # a job study: its own check refuses actions
    end = config.load.warmup + config.load.duration

    def fail(i: int, field: str, message: str) -> SpecError:
        return SpecError(f"{path}:{_line_of(lines, ('actions', i, field))}: actions.{i}.{field}: {message}")

    for i, action in enumerate(config.actions):
        if config.search is not None:
            fired = "at" if action.at is not None else "when" if action.when is not None else "after"
            raise fail(i, fired, "actions run during a fixed load, not a search (whose trials must be alike)")
        if action.at is not None and action.at >= end:
            raise fail(i, "at", f"{action.at:g}s is after the load ends ({end:g}s with its warm-up)")
        if action.do is not None and action.do not in declared:
            known = ", ".join(sorted(declared)) or "none: declare them under sut.actions"
            raise fail(i, "do", f"the system has no action {action.do!r} (its actions: {known})")


def _check_machines(config: StudyConfig, fail: Callable[[Path_, str], SpecError]) -> None:
    """Roles that share a ``machine:`` are on one profile, and consolidation (which places the
    roles itself) is not given as well."""
    roles = config.sut.roles if config.sut else {}
    first: dict[str, tuple[str, str]] = {}
    for role, spec in roles.items():
        if spec.machine is None:
            continue
        at: Path_ = ("sut", "roles", role, "machine")
        if config.consolidation is not None:
            raise fail(at, "consolidation: places the roles on machines itself; leave machine: out")
        profile = config.role_profiles().get(role)
        if profile is None:
            raise fail(at, "a role on a machine needs a profile: (the machine's hardware)")
        other, theirs = first.setdefault(spec.machine, (role, profile))
        if theirs != profile:
            raise fail(
                at,
                f"machine {spec.machine!r} is profile {theirs!r} (role {other!r}), not {profile!r}: "
                "roles on one machine share one profile",
            )


def _check_hardware(
    path: Path, lines: dict[Path_, int], config: StudyConfig, data: Any, cell: dict[str, Scalar]
) -> None:
    """Profiles name classes that exist, roles name profiles that exist, and every
    ``{volume.NAME}`` / ``{address.ROLE}`` has a volume or link behind it."""

    def fail(loc: Path_, message: str) -> SpecError:
        field = ".".join(str(p) for p in loc)
        raw = _raw_at(data, loc)
        refers = isinstance(raw, str) and any(m.group(1) in cell for m in _REF.finditer(raw))
        where = f" (in the cell where {', '.join(f'{k}={v}' for k, v in cell.items())})" if refers else ""
        return SpecError(f"{path}:{_line_of(lines, loc)}: {field}: {message}{where}")

    for name, profile in config.profiles.items():
        for volume, vclass in profile.volumes.items():
            if vclass not in config.volumes:
                known = ", ".join(sorted(config.volumes)) or "none: add a volumes: section"
                raise fail(
                    ("profiles", name, "volumes", volume),
                    f"unknown volume class {vclass!r} (defined: {known})",
                )
        if profile.link is not None and profile.link not in config.links:
            known = ", ".join(sorted(config.links)) or "none: add a links: section"
            raise fail(("profiles", name, "link"), f"unknown link class {profile.link!r} (defined: {known})")
    # Prices name what the study defines, with or without a SUT to run them on.
    for kind, priced, defined in (
        ("profiles", config.cost.profiles if config.cost else {}, config.profiles),
        ("volumes", config.cost.volumes if config.cost else {}, config.volumes),
        ("links", config.cost.links if config.cost else {}, config.links),
    ):
        for name in priced:
            if name not in defined:
                have = ", ".join(sorted(defined)) or "none"
                raise fail(
                    ("cost", kind, name),
                    f"prices {kind[:-1]} {name!r}, which the study does not define ({have})",
                )
    sut = config.sut
    if sut is None:
        return
    if config.job is not None and config.job.role is not None and config.job.role not in sut.roles:
        raise fail(("job", "role"), f"no role {config.job.role!r} in sut.roles")
    known = ", ".join(sorted(config.profiles)) or "none: add a profiles: section"
    c = config.consolidation
    if c is not None:
        for role, name in [*c.apart.items(), ("", c.together)]:
            at: Path_ = ("consolidation", "apart", role) if role else ("consolidation", "together")
            if name not in config.profiles:
                raise fail(at, f"unknown profile {name!r} (profiles: {known})")
            if role and role not in sut.roles:
                raise fail(at, f"no role {role!r} in sut.roles (roles: {', '.join(sut.roles) or 'none'})")
    if sut.profile is not None and sut.profile not in config.profiles:
        raise fail(("sut", "profile"), f"unknown profile {sut.profile!r} (profiles: {known})")
    for role, spec in sut.roles.items():
        if spec.profile is not None and spec.profile not in config.profiles:
            raise fail(
                ("sut", "roles", role, "profile"), f"unknown profile {spec.profile!r} (profiles: {known})"
            )
        if role in config.role_profiles() and not re.fullmatch(r"[A-Za-z0-9_.-]+", role):
            raise fail(
                ("sut", "roles", role), "a role on a profile is named with letters, digits, _ . - only"
            )
    _check_machines(config, fail)
    try:
        hardware = config.hardware()
    except ValueError as e:
        raise fail(("profiles",), str(e)) from e
    volumes = {f"{r}/{v}": None for r, p in hardware.items() for v in p.volumes}
    addresses = dict.fromkeys(hardware)  # across its link, or loopback without one
    texts: list[tuple[Path_, str | None]] = [(("sut", "start"), sut.start), (("sut", "stop"), sut.stop)]
    if sut.ready is not None:
        texts += [(("sut", "ready", k), getattr(sut.ready, k)) for k in ("url", "command", "host")]
    for kind in ("http", "tcp", "postgres"):
        target = getattr(config.target, kind) if config.target else None
        if target is not None:
            texts.append((("target", kind, "url"), target.url))
    if sut.metrics is not None:
        texts.append((("sut", "metrics", "url"), sut.metrics.url))
    if config.job is not None:
        texts += [(("job", "reset"), config.job.reset), (("job", "prepare"), config.job.prepare)]
        texts += [(("job", "phases", i, "run"), p.run) for i, p in enumerate(config.job.phases)]
    for loc, text in texts:
        if text:
            try:
                check_placeholders(text, volumes, addresses)
            except ValueError as e:
                raise fail(loc, str(e)) from e


def _check_disk_room(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """A cell's volumes fit in the space free where their images go (under the study's directory):
    said here, before anything runs, rather than by the first cell that cannot make its volume."""
    used = [c for p in config.hardware().values() for c in p.volume_class_names.values()]
    if not used:
        return
    where = path.parent.resolve()
    free = shutil.disk_usage(where).free
    total = 0
    for vclass in used:
        size = config.volumes[vclass].size
        total += size
        if total > free:
            need = (
                f"{format_size(size)} is"
                if size == total
                else f"with the cell's other volumes, {format_size(total)} in all, is"
            )
            raise SpecError(
                f"{path}:{_line_of(lines, ('volumes', vclass, 'size'))}: volumes.{vclass}.size: {need} more "
                f"than the {format_size(free)} free under {where} (where the cell's volumes are made)"
            )


def _check_counters(path: Path, lines: dict[Path_, int], config: StudyConfig) -> None:
    """A phase whose items are the system's counter needs the endpoint to read it from."""
    if config.job is None or (config.sut is not None and config.sut.metrics is not None):
        return
    for i, phase in enumerate(config.job.phases):
        if isinstance(phase.items, CounterItems):
            loc: Path_ = ("job", "phases", i, "items", "counter")
            raise SpecError(
                f"{path}:{_line_of(lines, loc)}: job.phases.{i}.items.counter: the system's counter is "
                "read from sut.metrics: add it (url, and a rate or gauge to sample)"
            )


def load_study(path: str | Path) -> Study:
    """Reads and validates a study file; raises SpecError with ``file:line: field: message``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from e
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 1
        raise SpecError(f"{path}:{line}: YAML syntax error: {e.problem}") from e
    if not isinstance(data, dict) or node is None:
        raise SpecError(f"{path}:1: a study file must be a YAML mapping (name:, target:, load: …)")
    lines = _line_map(node)
    factors_raw = data.pop("factors", None)
    if isinstance(data.get("consolidation"), dict):
        factors_raw = _with_placement(factors_raw, path, lines)
        data["placement"] = "{placement}"
    try:
        matrix = _matrix(factors_raw, "factors")
    except ValueError as e:
        raise SpecError(f"{path}:{lines.get(('factors',), 1)}: {e}") from e
    cells = []
    for index, factors in enumerate(matrix):
        try:
            cell_data = substitute(data, factors)
            searching = isinstance(cell_data, dict) and (
                cell_data.get("search") is not None or cell_data.get("job") is not None
            )
            config = StudyConfig.model_validate(cell_data, context={"search": searching})
        except ValidationError as e:
            errors = e.errors()
            # A misspelt key also makes the right one "missing": report the misspelling.
            first = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
            raise SpecError(_format_error(path, lines, first, data, factors)) from e
        _check_files(path, lines, config)
        _check_usage(path, lines, config)
        _check_actions(path, lines, config)
        _check_hosts(path, lines, config)
        _check_hardware(path, lines, config, data, factors)
        _check_counters(path, lines, config)
        _check_disk_room(path, lines, config)
        cells.append(Cell(index, factors, config))
    names = list(matrix[0]) if matrix else []
    goal = cells[0].config.goal if cells else None
    for i, name in enumerate(goal.for_each if goal else []):
        if name not in names:
            line = lines.get(("goal", "for_each", i), lines.get(("goal",), 1))
            known = ", ".join(names) or "none"
            raise SpecError(f"{path}:{line}: goal.for_each: {name!r} is not a factor (the factors: {known})")
    if goal is not None and goal.users is not None and any(c.config.requests[1].open_model for c in cells):
        line = lines.get(("goal", "users"), lines.get(("goal",), 1))
        raise SpecError(
            f"{path}:{line}: goal.users: the study's load is a rate (open model): give goal.rate, or "
            "load users (a search: for the most users) to size for users"
        )
    if goal is not None and goal.phase is not None:
        job = cells[0].config.job
        phases = [p.name for p in job.phases] if job else []
        if goal.phase not in phases:
            line = lines.get(("goal", "phase"), lines.get(("goal",), 1))
            what = f"the job's phases: {', '.join(phases)}" if phases else "the study has no job:"
            raise SpecError(f"{path}:{line}: goal.phase: {goal.phase!r} is not a phase of the job ({what})")
    return Study(path=path, text=text, name=cells[0].config.name, factor_names=names, cells=cells)
