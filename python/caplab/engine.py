"""The Python face of the load engine: typed plans in, typed results out.

A plan is plain data (dataclasses); the Rust engine validates it again and names the field when
something is wrong. The run releases the GIL; interval snapshots stream to an optional callback.
Ctrl-C stops the run and returns what was measured, with ``interrupted`` set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from caplab import _engine
from caplab._engine import PlanError, TargetUnreachable, WorkerFailed
from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S

__all__ = [
    "DEFAULT_INTERVAL_S",
    "DEFAULT_RECONNECT_BACKOFF_MS",
    "DEFAULT_TIMEOUT_S",
    "ENGINE_VERSION",
    "ClassFigures",
    "ClosedLoad",
    "GeneratorFigures",
    "IntervalSnapshot",
    "LatencySummary",
    "LoadSpec",
    "MailOptions",
    "OpenLoad",
    "Plan",
    "PlanError",
    "RequestClass",
    "RunResult",
    "Segment",
    "Target",
    "TargetInterval",
    "TargetSeries",
    "TargetUnreachable",
    "Think",
    "TlsOptions",
    "UsageAction",
    "UsageProblem",
    "WorkerFailed",
    "build_plan",
    "merge_histograms",
    "run",
    "summarize_histogram",
]

Framing = Literal["line", "u32", "mllp"]
Arrivals = Literal["constant", "poisson"]

ENGINE_VERSION: str = _engine.__version__
"""The compiled engine's version, recorded with every study's environment."""
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


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds. A percentile is None when the sample is too small to support it (p95 needs
    20 samples, p99 100). ``p95`` comes last, with a default, so summaries written before the
    engine gave it (stored results, older load agents) still read, as None."""

    count: int
    min: float | None
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None
    p95: float | None = None

    @staticmethod
    def from_dict(d: dict[str, Any]) -> LatencySummary:
        return LatencySummary(**d)


@dataclass(frozen=True)
class IntervalSnapshot:
    index: int
    start_s: float
    end_s: float
    warmup: bool
    sent: int
    completed: int
    errors: int
    dropped: int
    in_flight: int
    throughput: float
    latency_ms: LatencySummary

    @staticmethod
    def from_dict(d: dict[str, Any]) -> IntervalSnapshot:
        return IntervalSnapshot(**{**d, "latency_ms": LatencySummary.from_dict(d["latency_ms"])})


@dataclass(frozen=True)
class TargetInterval:
    """One target's completions and errors in one interval of the run's interval clock (the
    same start and end as the run's ``intervals``, warm-up included)."""

    start_s: float
    end_s: float
    completed: int
    errors: int


@dataclass(frozen=True)
class TargetSeries:
    """One target's share of a run over several: measured totals (they sum to the run's) and its
    interval series, from which a target's recovery after a fault is read."""

    label: str
    """The target's URL without any password."""
    completed: int
    errors: int
    intervals: tuple[TargetInterval, ...]

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TargetSeries:
        return TargetSeries(
            label=d["label"],
            completed=d["completed"],
            errors=d["errors"],
            intervals=tuple(TargetInterval(**i) for i in d["intervals"]),
        )


@dataclass(frozen=True)
class GeneratorFigures:
    threads: int
    cpu_s: float
    cpu_us_per_request: float | None
    lateness_p99_ms: float | None
    lateness_max_ms: float | None
    busiest_thread: float
    connections_opened: int
    saturated: bool
    saturation_reason: str | None
    held_rate: float | None = None
    """Open model: requests per second that actually left in the measured window."""
    tls_handshakes: int | None = None
    """TLS targets: handshakes completed in the measured window, full and resumed; else None."""
    tls_resumed: int | None = None
    """Of ``tls_handshakes``, those that resumed a session the server gave earlier (cheaper)."""
    tls_handshakes_per_s: float | None = None
    """``tls_handshakes`` per second of the measured window: one per request without keep-alive."""


@dataclass(frozen=True)
class ClassFigures:
    """One request class's (a usage profile's action's) share of a run: counts and latency."""

    name: str
    sent: int
    completed: int
    errors: int
    latency_ms: LatencySummary
    service_time_ms: LatencySummary
    latency_hdr: str = field(repr=False)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ClassFigures:
        return ClassFigures(
            name=d["name"],
            sent=d["sent"],
            completed=d["completed"],
            errors=d["errors"],
            latency_ms=LatencySummary.from_dict(d["latency_ms"]),
            service_time_ms=LatencySummary.from_dict(d["service_time_ms"]),
            latency_hdr=d["latency_hdr"],
        )


@dataclass(frozen=True)
class RunResult:
    """One trial's measurements. ``raw`` keeps the engine's JSON object, histograms included."""

    model: Literal["open", "closed"]
    offered_rate: float | None
    users: int | None
    duration_s: float
    warmup_s: float
    sent: int
    completed: int
    errors: int
    dropped: int
    in_flight_at_end: int
    throughput: float
    latency_ms: LatencySummary
    service_time_ms: LatencySummary
    errors_by_kind: dict[str, int]
    intervals: list[IntervalSnapshot]
    generator: GeneratorFigures
    max_in_flight: int | None
    interrupted: bool
    raw: dict[str, Any] = field(repr=False, compare=False)
    error_samples: dict[str, str] = field(default_factory=dict)
    """For each kind in ``errors_by_kind``, the first words a driver gave for it (a PostgreSQL
    server's message for ``sql:42``), where the driver keeps them."""
    per_target: tuple[TargetSeries, ...] = ()
    """With several targets, each one's counts and interval series in plan order; else empty."""

    @property
    def latency_hdr(self) -> str:
        """All classes' latency histogram, HdrHistogram V2 (base64)."""
        return str(self.raw["latency_hdr"])

    @property
    def steps(self) -> dict[str, LatencySummary]:
        """Mail targets: each session step's latency over the measured requests (SMTP connect,
        auth, envelope, data; IMAP connect, login, select, fetch), in the order they first ran;
        empty for the other drivers."""
        return {s["name"]: LatencySummary.from_dict(s["latency_ms"]) for s in self.raw.get("steps", [])}

    @property
    def classes(self) -> tuple[ClassFigures, ...]:
        """Each request class's figures, in plan order (a usage profile's actions)."""
        return tuple(ClassFigures.from_dict(c) for c in self.raw.get("classes", []))

    @staticmethod
    def from_json(text: str) -> RunResult:
        d = json.loads(text)
        return RunResult(
            model=d["model"],
            offered_rate=d["offered_rate"],
            users=d["users"],
            duration_s=d["duration_s"],
            warmup_s=d["warmup_s"],
            sent=d["sent"],
            completed=d["completed"],
            errors=d["errors"],
            dropped=d["dropped"],
            in_flight_at_end=d["in_flight_at_end"],
            throughput=d["throughput"],
            latency_ms=LatencySummary.from_dict(d["latency_ms"]),
            service_time_ms=LatencySummary.from_dict(d["service_time_ms"]),
            errors_by_kind=dict(d["errors_by_kind"]),
            intervals=[IntervalSnapshot.from_dict(i) for i in d["intervals"]],
            generator=GeneratorFigures(**d["generator"]),
            max_in_flight=d["max_in_flight"],
            interrupted=d["interrupted"],
            raw=d,
            error_samples=dict(d.get("error_samples", {})),
            per_target=tuple(TargetSeries.from_dict(t) for t in d.get("per_target", [])),
        )


def run(plan: Plan, on_interval: Callable[[IntervalSnapshot], bool | None] | None = None) -> RunResult:
    """Runs one trial. Raises PlanError (bad plan), TargetUnreachable (nothing listening, or a TLS
    server whose certificate fails verification: the message says why) or
    WorkerFailed (a generator thread failed, so the counts would be incomplete).

    ``on_interval`` sees every interval snapshot; returning False stops the run early (the result
    is kept, with ``interrupted`` set), as Ctrl-C does."""
    callback = None
    if on_interval is not None:
        sink = on_interval

        def callback(text: str) -> bool | None:
            return sink(IntervalSnapshot.from_dict(json.loads(text)))

    return RunResult.from_json(_engine.run_plan(plan.to_json(), callback))


def merge_histograms(encoded: list[str]) -> str:
    """Merges V2-encoded histograms (from threads, trials or machines) into one."""
    return _engine.merge_histograms(encoded)


def summarize_histogram(encoded: str) -> LatencySummary:
    return LatencySummary.from_dict(json.loads(_engine.summarize_histogram(encoded)))


SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class UsageAction:
    """One action of a usage profile: a named request class sent ``per_hour`` times an hour by each
    user, on average (the paper's messages sent and read per user per day, over 24 hours)."""

    name: str
    per_hour: float
    method: str = "GET"
    path: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    template: bool = False
    target: str | None = None
    """The URL this action goes to, when not the load's own (a mail system's IMAP beside its SMTP)."""


def usage_think_s(actions: tuple[UsageAction, ...]) -> float:
    """The mean think time that makes each user send the profile's actions at their summed rate:
    3600 / (actions per user-hour). It takes the think time as the whole of a user's cycle, so it
    holds while replies are quick against it (ms against seconds); slower replies make users act a
    little less often than the profile says, and the result shows the rate they did reach."""
    total = sum(a.per_hour for a in actions)
    if not total > 0:
        raise UsageProblem("the usage profile's action rates sum to nothing: give an action a rate > 0")
    return SECONDS_PER_HOUR / total


def usage_classes(actions: tuple[UsageAction, ...]) -> tuple[RequestClass, ...]:
    """The profile's actions as the engine's request mix, weights in proportion to their rates (an
    action at rate 0 is left out: a study factor may switch one off)."""
    return tuple(
        RequestClass(a.name, a.per_hour, a.method.upper(), a.path, a.headers, a.body, a.template)
        for a in actions
        if a.per_hour > 0
    )


class UsageProblem(ValueError):
    """A load description that makes no sense (both a rate and users, a ramp without a rate…);
    the command line reports it with exit code 2, a study fails the cell with it."""


@dataclass(frozen=True)
class LoadSpec:
    """One load, as `caplab load`, a study cell and a capacity-search trial all describe it:
    numbers already in seconds and per second. `build_plan` is the one way to a `Plan`."""

    url: str
    rate: float | None = None
    ramp_to: float | None = None
    steps: tuple[tuple[float, float], ...] | None = None
    """A staircase: (rate, seconds) per step."""
    users: int | None = None
    think_s: float = 0.0
    think_dist: Literal["constant", "exponential"] = "constant"
    logon_s: float = 0.0
    """Closed model: the users' first requests spread evenly over this long (within the warm-up)."""
    schedule: Arrivals = "constant"
    duration_s: float = 10.0
    warmup_s: float = 0.0
    threads: int | None = None
    connections: int | None = None
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    body_file: Path | None = None
    template: bool = False
    framing: Framing | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_requests: int | None = None
    interval_s: float = DEFAULT_INTERVAL_S
    seed: int = 0
    password: str | None = field(default=None, repr=False)
    """PostgreSQL: the password libpq found (the URL given here holds none)."""
    scale: int | None = None
    """PostgreSQL: pgbench's scale factor, ``:scale`` in its scripts."""
    workload: str | None = None
    """PostgreSQL: the transaction's name (``tpcb``, ``select-only``, a script file's name)."""
    extra_targets: tuple[Target, ...] = ()
    """More targets of the URL's protocol sharing the load (many databases): see `Plan`."""
    reconnect_backoff_ms: float = DEFAULT_RECONNECT_BACKOFF_MS
    insecure: bool = False
    """TLS targets: take any certificate (a test server's self-signed one)."""
    ca_file: Path | None = None
    """TLS targets: trust only the CA certificates in this PEM file."""
    tls_resume: bool = True
    """TLS targets: resume sessions on new connections (False: a full handshake every time)."""
    usage: tuple[UsageAction, ...] | None = None
    """A usage profile: ``users`` each send these actions at their rates (closed model, exponential
    think time of 3600 / the rates' sum, the mix weighted by the rates)."""
    mail: MailOptions | None = None
    """SMTP and IMAP targets: users, credentials, message size, fetch (default: `MailOptions()`)."""

    @property
    def open_model(self) -> bool:
        return self.rate is not None or self.steps is not None


def build_plan(spec: LoadSpec) -> Plan:
    """Turns a load description into an engine plan, rejecting combinations that make no sense."""
    open_model = spec.open_model
    if open_model and spec.users is not None:
        raise UsageProblem("give --rate/--steps (open model) or --users (closed model), not both")
    if spec.think_s and open_model:
        raise UsageProblem("--think applies to the closed model (--users)")
    if spec.logon_s and open_model:
        raise UsageProblem("--logon applies to the closed model (--users)")
    if spec.logon_s > spec.warmup_s:
        raise UsageProblem(
            "--logon must fall within the warm-up (--warmup at least as long): logons are not measured"
        )
    if spec.ramp_to is not None and spec.rate is None:
        raise UsageProblem("--ramp-to needs --rate (the starting rate)")
    if spec.steps is not None and spec.rate is not None:
        raise UsageProblem("give --rate or --steps, not both")
    is_tcp = spec.url.startswith(("tcp://", "tls://"))
    if is_tcp and spec.framing is None:
        scheme = spec.url.partition("://")[0]
        raise UsageProblem(f"{scheme}:// targets need --framing line|u32|mllp")
    if not is_tcp and spec.framing is not None:
        raise UsageProblem("--framing applies to tcp:// targets (and tls://: framed TCP in TLS)")
    if spec.usage is not None:
        return _usage_plan(spec)
    load: OpenLoad | ClosedLoad
    if spec.steps is not None:
        load = OpenLoad(tuple(Segment(d, r, r) for r, d in spec.steps), spec.schedule)
    elif spec.rate is not None:
        end = spec.ramp_to if spec.ramp_to is not None else spec.rate
        load = OpenLoad((Segment(spec.duration_s, spec.rate, end),), spec.schedule)
    else:
        users = spec.users if spec.users is not None else (spec.connections or 10)
        think = Think(spec.think_dist, spec.think_s) if spec.think_s else Think()
        load = ClosedLoad(users, think, spec.logon_s)
    if is_postgres(spec.url):
        request = RequestClass(name=spec.workload or "transaction", body=_body(spec))
        target = Target(spec.url, None, spec.password, spec.scale)
    elif is_mail(spec.url):
        name, action = MAIL_ACTIONS[spec.url.partition("://")[0]]
        if spec.method.upper() not in ("GET", action):
            raise UsageProblem(
                f"{spec.url.partition(':')[0]}:// targets {name} (method {action}), not {spec.method}"
            )
        request = RequestClass(name=name, method=action, body=_body(spec))
        target = Target(spec.url)
    else:
        request = RequestClass(
            method=spec.method.upper(), headers=spec.headers, body=_body(spec), template=spec.template
        )
        target = Target(spec.url, spec.framing)
    return Plan(
        target=target,
        load=load,
        duration_s=load.duration_s if isinstance(load, OpenLoad) and spec.steps else spec.duration_s,
        warmup_s=spec.warmup_s,
        requests=(request,),
        max_requests=spec.max_requests,
        max_in_flight=spec.connections if open_model else None,
        interval_s=spec.interval_s,
        threads=spec.threads,
        timeout_s=spec.timeout_s,
        seed=spec.seed,
        extra_targets=spec.extra_targets,
        reconnect_backoff_ms=spec.reconnect_backoff_ms,
        tls=_tls(spec),
        mail=_mail(spec),
    )


def _mail(spec: LoadSpec) -> MailOptions | None:
    if not is_mail(spec.url):
        if spec.mail is not None:
            raise UsageProblem("mail options apply to smtp://, smtps://, imap:// and imaps:// targets")
        return None
    options = spec.mail or MailOptions()
    protocol = spec.url.partition(":")[0].removesuffix("s")
    return replace(options, reuse=options.reuse and protocol not in options.per_action, per_action=())


def _usage_plan(spec: LoadSpec) -> Plan:
    """A usage profile's plan: its users, the think time and the mix its rates make."""
    assert spec.usage is not None
    if spec.open_model:
        raise UsageProblem("a usage profile drives users (closed model): give --users, not --rate/--steps")
    if spec.think_s:
        raise UsageProblem("a usage profile sets the think time itself (3600 s / its actions per user-hour)")
    if spec.users is None:
        raise UsageProblem("a usage profile needs the number of users (--users N)")
    if spec.body is not None or spec.body_file is not None or spec.template or spec.headers:
        raise UsageProblem("with a usage profile, each action gives its own body, headers and template")
    if spec.method.upper() != "GET":
        raise UsageProblem("with a usage profile, each action gives its own method")
    if is_postgres(spec.url):
        raise UsageProblem("usage profiles drive http://, https://, tcp:// and tls:// targets")
    groups: dict[str, tuple[UsageAction, ...]] = {}
    for a in spec.usage:
        if a.per_hour > 0:
            url = a.target or spec.url
            groups[url] = (*groups.get(url, ()), a)
    if len(groups) > 1:
        # Each action of a user is its own Poisson stream (exponential think, actions picked at
        # random), so N users doing all of them are N users per target doing that target's.
        own = groups.pop(spec.url, None) or groups.pop(next(iter(groups)))
        first = own[0].target or spec.url
        main = _usage_plan(replace(spec, url=first, usage=own))
        others = tuple(
            _usage_plan(replace(spec, url=url, usage=actions, seed=spec.seed + i))
            for i, (url, actions) in enumerate(groups.items(), start=1)
        )
        return replace(main, alongside=others)
    if groups and next(iter(groups)) != spec.url:  # every action goes elsewhere: that is the target
        return _usage_plan(replace(spec, url=next(iter(groups))))
    think = Think("exponential", usage_think_s(spec.usage))
    base = build_plan(replace(spec, usage=None))
    requests = usage_classes(spec.usage)
    if is_mail(spec.url):  # a mail target's one action (SEND or READ) is every action's method
        action = base.requests[0].method
        for r in requests:
            if r.method not in ("GET", action):
                raise UsageProblem(
                    f"usage action {r.name}: a {spec.url.partition(':')[0]}:// target's "
                    f"method is {action}, not {r.method}"
                )
        requests = tuple(replace(r, method=action) for r in requests)
    return replace(base, load=ClosedLoad(spec.users, think, spec.logon_s), requests=requests)


def _tls(spec: LoadSpec) -> TlsOptions | None:
    """The plan's TLS options: none for a plain target, where --insecure and --cacert mean nothing."""
    asked = spec.insecure or spec.ca_file is not None or not spec.tls_resume
    if not uses_tls(spec.url) and not (is_mail(spec.url) and asked):
        # On smtp:// and imap:// TLS options ask for STARTTLS; without them it is used only when
        # the mail options require it, then verified against the Mozilla roots.
        if asked:
            raise UsageProblem(
                "--insecure, --cacert and --no-tls-resume apply to https:// and tls:// targets (and to "
                "mail: smtp(s)://, imap(s)://)"
            )
        return None
    if spec.insecure and spec.ca_file is not None:
        raise UsageProblem("give --cacert (verify against it) or --insecure (verify nothing), not both")
    if spec.ca_file is not None and not spec.ca_file.is_file():
        raise UsageProblem(f"--cacert {spec.ca_file}: no such file")
    ca_file = str(spec.ca_file) if spec.ca_file else None
    return TlsOptions(insecure=spec.insecure, ca_file=ca_file, resume=spec.tls_resume)


def _body(spec: LoadSpec) -> str:
    if spec.body is not None and spec.body_file is not None:
        raise UsageProblem("give --body or --body-file, not both")
    if spec.body_file is None:
        return spec.body or ""
    try:
        return spec.body_file.read_text()
    except OSError as e:
        raise UsageProblem(f"--body-file {spec.body_file}: {e.strerror}") from e
