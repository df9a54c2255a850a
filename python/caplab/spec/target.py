"""What the load is sent to: an HTTP or TCP payload, a PostgreSQL database (or a list of
them), a mail system."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import BeforeValidator, Field, model_validator

from caplab.spec.fields import Strict, as_fraction, as_size
from caplab.spec.load import UsageSpec


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
    share: Annotated[float, BeforeValidator(as_fraction), Field(ge=0, le=1)] = 1.0
    loaded: Annotated[float, BeforeValidator(as_fraction), Field(ge=0, le=1)] = 0.0
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
    message_size: Annotated[int, BeforeValidator(as_size), Field(ge=1)] | None = None
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
