"""The run plan the engine takes: one trial's target, load, requests and options, as plain
frozen data with the engine's wire form (engine/src/plan.rs validates it again and names the field)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S

Framing = Literal["line", "u32", "mllp"]
Arrivals = Literal["constant", "poisson"]


DEFAULT_RECONNECT_BACKOFF_MS = 10.0
"""Closed model: how long a user whose connection attempt failed waits before trying again."""


@dataclass(frozen=True)
class Target:
    """``http://host:port/path``, ``https://…``, ``tcp://host:port`` or ``tls://host:port`` (framed
    TCP in TLS; both need a framing) or a libpq URL ``postgresql://user@host:port/db`` (its
    password apart, its pgbench scale for scripts)."""

    url: str
    framing: Framing | None = None
    password: str | None = field(default=None, repr=False)
    scale: int | None = None


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def uses_tls(url: str) -> bool:
    """Whether the engine speaks TLS to this target from the first byte (``https://``, ``tls://``,
    ``smtps://``, ``imaps://``)."""
    return url.startswith(("https://", "tls://", "smtps://", "imaps://"))


def is_mail(url: str) -> bool:
    """Whether the target is a mail server: SMTP sends (``smtp://``, ``smtps://``) or IMAP reads
    (``imap://``, ``imaps://``)."""
    return url.startswith(("smtp://", "smtps://", "imap://", "imaps://"))


MAIL_ACTIONS = {
    "smtp": ("send", "SEND"),
    "smtps": ("send", "SEND"),
    "imap": ("read", "READ"),
    "imaps": ("read", "READ"),
}
"""Each mail scheme's action: its request class's name and the engine's method for it."""


@dataclass(frozen=True)
class MailOptions:
    """SMTP and IMAP targets (engine/src/plan.rs ``MailOptions``). A request acts as user
    ``1 + seq % mailboxes``: ``{user}`` in ``user``, ``rcpt`` and a message body becomes it (and
    ``{seq}`` the request's number). Credentials: one ``password`` or a ``password_file`` of
    ``user:password`` lines (the mail system's ``DIR/passwords``); IMAP needs them, SMTP sends
    AUTH only with them. ``starttls``: plain ``smtp://``/``imap://`` upgrade (True: required;
    False: never; None: when the plan has TLS options). ``reuse``: keep the session for the next
    request (False: QUIT/LOGOUT after each, so each pays connect, TLS and login). ``per_action``:
    the protocols (``smtp``, ``imap``) whose sessions end after each request whatever ``reuse``
    says — a usage profile's users who send over a fresh SMTP connection each time beside an IMAP
    session they keep, as mail clients do; resolved into ``reuse`` per plan, never sent."""

    user: str = "user{user}"
    mailboxes: int = 1
    rcpt: str = "user{user}@caplab.test"
    sender: str = "caplab@caplab.test"
    password: str | None = field(default=None, repr=False)
    password_file: str | None = None
    starttls: bool | None = None
    message_bytes: int | None = None
    fetch_last: int = 10
    fetch_items: str = "(FLAGS BODY.PEEK[])"
    reuse: bool = True
    per_action: tuple[str, ...] = ()


@dataclass(frozen=True)
class TlsOptions:
    """How TLS targets check the server: against the Mozilla roots by default, against only the
    CAs in ``ca_file`` (PEM), or not at all with ``insecure`` (a test server's self-signed
    certificate). ``server_name`` is the name the certificate must carry when the URL names the
    server otherwise (an IP address). ``resume``: new connections resume sessions the server gave
    earlier (as browsers do); False makes every handshake a full one, to measure what it costs."""

    insecure: bool = False
    ca_file: str | None = None
    server_name: str | None = None
    resume: bool = True


@dataclass(frozen=True)
class RequestClass:
    """One kind of request in the mix; the engine keeps statistics per class."""

    name: str = "default"
    weight: float = 1.0
    method: str = "GET"
    path: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    template: bool = False
    """Replace ``{seq}`` in the body with a per-request sequence number."""


@dataclass(frozen=True)
class Segment:
    """A stretch of the rate profile over which the rate moves linearly."""

    duration_s: float
    rate_start: float
    rate_end: float


@dataclass(frozen=True)
class OpenLoad:
    """Arrival-rate load: sends follow the schedule whatever the replies do."""

    profile: tuple[Segment, ...]
    arrivals: Arrivals = "constant"

    @staticmethod
    def constant(rate: float, duration_s: float, arrivals: Arrivals = "constant") -> OpenLoad:
        return OpenLoad((Segment(duration_s, rate, rate),), arrivals)

    @staticmethod
    def ramp(start: float, end: float, duration_s: float) -> OpenLoad:
        return OpenLoad((Segment(duration_s, start, end),))

    @staticmethod
    def steps(steps: list[tuple[float, float]]) -> OpenLoad:
        """``[(rate, seconds), …]``: a staircase of constant rates."""
        return OpenLoad(tuple(Segment(d, r, r) for r, d in steps))

    @property
    def duration_s(self) -> float:
        return sum(s.duration_s for s in self.profile)


@dataclass(frozen=True)
class Think:
    kind: Literal["none", "constant", "exponential"] = "none"
    mean_s: float = 0.0


@dataclass(frozen=True)
class ClosedLoad:
    """A fixed population of users: send, wait for the reply, think, repeat. ``logon_s``: the
    users' first requests fall uniformly over the run's first seconds (within the warm-up), so
    sessions a user keeps (a mail login, a TLS connection) are open before measuring starts."""

    users: int
    think: Think = field(default_factory=Think)
    logon_s: float = 0.0


@dataclass(frozen=True)
class Plan:
    """One trial for the engine. ``extra_targets`` (same protocol as ``target``: many databases,
    many mail hosts) share the load round-robin — closed user i sends to target i mod n, open
    arrivals take the targets in turn — and the result then has ``per_target`` series."""

    target: Target
    load: OpenLoad | ClosedLoad
    duration_s: float
    warmup_s: float = 0.0
    requests: tuple[RequestClass, ...] = (RequestClass(),)
    max_requests: int | None = None
    max_in_flight: int | None = None
    interval_s: float = DEFAULT_INTERVAL_S
    threads: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    saturation_lateness_ms: float = 20.0
    seed: int = 0
    extra_targets: tuple[Target, ...] = ()
    reconnect_backoff_ms: float = DEFAULT_RECONNECT_BACKOFF_MS
    tls: TlsOptions | None = None
    mail: MailOptions | None = None
    alongside: tuple[Plan, ...] = ()
    """Plans run side by side with this one and merged into one result (a usage profile whose
    actions go to targets of other protocols: SMTP sends beside IMAP reads); never sent to the
    engine, which runs one protocol per plan."""

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every target, in the order of ``RunResult.per_target``."""
        return (self.target, *self.extra_targets)

    def load_words(self) -> str:
        """The load in a progress line's words: an open model's starting rate, or its users."""
        if isinstance(self.load, OpenLoad):
            return f"{self.load.profile[0].rate_start:g}/s"
        return f"{self.load.users} users"

    def to_json(self) -> str:
        """The engine's wire form (see engine/src/plan.rs)."""
        data = asdict(self)
        del data["alongside"]
        data["target"] = {k: v for k, v in data["target"].items() if v is not None}
        data["extra_targets"] = [{k: v for k, v in t.items() if v is not None} for t in data["extra_targets"]]
        if data["tls"] is None:
            del data["tls"]
        else:
            data["tls"] = {k: v for k, v in data["tls"].items() if v is not None}
        if data["mail"] is None:
            del data["mail"]
        else:
            data["mail"] = {k: v for k, v in data["mail"].items() if v is not None and k != "per_action"}
        if isinstance(self.load, OpenLoad):
            data["load"] = {
                "model": "open",
                "arrivals": self.load.arrivals,
                "profile": data["load"]["profile"],
            }
        else:
            think: dict[str, Any] = {"kind": self.load.think.kind}
            if self.load.think.kind != "none":
                think["mean_s"] = self.load.think.mean_s
            data["load"] = {"model": "closed", "users": self.load.users, "think": think}
            if self.load.logon_s:
                data["load"]["logon_s"] = self.load.logon_s
        for r in data["requests"]:
            r["headers"] = [list(h) for h in r["headers"]]
        return json.dumps(data)
