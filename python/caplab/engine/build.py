"""The one plan builder: a load as `caplab load`, a study cell and a capacity trial describe it
(`LoadSpec`), checked for combinations that make no sense and turned into a `Plan`; a usage
profile becomes a closed population with its think time and request mix."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from caplab.engine.plan import (
    DEFAULT_RECONNECT_BACKOFF_MS,
    MAIL_ACTIONS,
    Arrivals,
    ClosedLoad,
    Framing,
    MailOptions,
    OpenLoad,
    Plan,
    RequestClass,
    Segment,
    Target,
    Think,
    TlsOptions,
    is_mail,
    is_postgres,
    uses_tls,
)
from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S

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
    _check_load_model(spec)
    _check_framing(spec)
    if spec.usage is not None:
        return _usage_plan(spec)
    load = _load_of(spec)
    target, request = _target_and_request(spec)
    return Plan(
        target=target,
        load=load,
        duration_s=load.duration_s if isinstance(load, OpenLoad) and spec.steps else spec.duration_s,
        warmup_s=spec.warmup_s,
        requests=(request,),
        max_requests=spec.max_requests,
        max_in_flight=spec.connections if spec.open_model else None,
        interval_s=spec.interval_s,
        threads=spec.threads,
        timeout_s=spec.timeout_s,
        seed=spec.seed,
        extra_targets=spec.extra_targets,
        reconnect_backoff_ms=spec.reconnect_backoff_ms,
        tls=_tls(spec),
        mail=_mail(spec),
    )


def _check_load_model(spec: LoadSpec) -> None:
    """The open model's options (a rate, steps, a ramp) and the closed model's (users, think,
    logon) are not mixed, and logons fall within the warm-up."""
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


def _check_framing(spec: LoadSpec) -> None:
    """Framed TCP (``tcp://``, ``tls://``) needs a framing; nothing else takes one."""
    is_tcp = spec.url.startswith(("tcp://", "tls://"))
    if is_tcp and spec.framing is None:
        scheme = spec.url.partition("://")[0]
        raise UsageProblem(f"{scheme}:// targets need --framing line|u32|mllp")
    if not is_tcp and spec.framing is not None:
        raise UsageProblem("--framing applies to tcp:// targets (and tls://: framed TCP in TLS)")


def _load_of(spec: LoadSpec) -> OpenLoad | ClosedLoad:
    """Steps, a rate (ramped or not) or users: without any, the connections' count of users."""
    if spec.steps is not None:
        return OpenLoad(tuple(Segment(d, r, r) for r, d in spec.steps), spec.schedule)
    if spec.rate is not None:
        end = spec.ramp_to if spec.ramp_to is not None else spec.rate
        return OpenLoad((Segment(spec.duration_s, spec.rate, end),), spec.schedule)
    users = spec.users if spec.users is not None else (spec.connections or 10)
    think = Think(spec.think_dist, spec.think_s) if spec.think_s else Think()
    return ClosedLoad(users, think, spec.logon_s)


def _target_and_request(spec: LoadSpec) -> tuple[Target, RequestClass]:
    """The target and its one request: a PostgreSQL transaction, a mail action (SEND or READ,
    by the scheme) or an HTTP or framed-TCP request."""
    if is_postgres(spec.url):
        request = RequestClass(name=spec.workload or "transaction", body=_body(spec))
        return Target(spec.url, None, spec.password, spec.scale), request
    if is_mail(spec.url):
        name, action = MAIL_ACTIONS[spec.url.partition("://")[0]]
        if spec.method.upper() not in ("GET", action):
            raise UsageProblem(
                f"{spec.url.partition(':')[0]}:// targets {name} (method {action}), not {spec.method}"
            )
        return Target(spec.url), RequestClass(name=name, method=action, body=_body(spec))
    request = RequestClass(
        method=spec.method.upper(), headers=spec.headers, body=_body(spec), template=spec.template
    )
    return Target(spec.url, spec.framing), request


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
    users = _usage_users(spec)
    groups = _actions_by_target(spec.url, spec.usage)
    if len(groups) > 1:
        return _plans_side_by_side(spec, groups)
    if groups and next(iter(groups)) != spec.url:  # every action goes elsewhere: that is the target
        return _usage_plan(replace(spec, url=next(iter(groups))))
    think = Think("exponential", usage_think_s(spec.usage))
    base = build_plan(replace(spec, usage=None))
    requests = usage_classes(spec.usage)
    if is_mail(spec.url):
        requests = _with_mail_method(spec.url, base.requests[0].method, requests)
    return replace(base, load=ClosedLoad(users, think, spec.logon_s), requests=requests)


def _usage_users(spec: LoadSpec) -> int:
    """The users a usage profile drives; the options it sets itself, or its actions give, refused."""
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
    return spec.users


def _actions_by_target(url: str, usage: tuple[UsageAction, ...]) -> dict[str, tuple[UsageAction, ...]]:
    """The actions with a rate, by the URL they go to (their own target, or the load's ``url``)."""
    groups: dict[str, tuple[UsageAction, ...]] = {}
    for a in usage:
        if a.per_hour > 0:
            to = a.target or url
            groups[to] = (*groups.get(to, ()), a)
    return groups


def _plans_side_by_side(spec: LoadSpec, groups: dict[str, tuple[UsageAction, ...]]) -> Plan:
    """One plan per target, the load's own (or the first) carrying the others ``alongside``.

    Each action of a user is its own Poisson stream (exponential think, actions picked at
    random), so N users doing all of them are N users per target doing that target's."""
    groups = dict(groups)
    own = groups.pop(spec.url, None) or groups.pop(next(iter(groups)))
    first = own[0].target or spec.url
    main = _usage_plan(replace(spec, url=first, usage=own))
    others = tuple(
        _usage_plan(replace(spec, url=url, usage=actions, seed=spec.seed + i))
        for i, (url, actions) in enumerate(groups.items(), start=1)
    )
    return replace(main, alongside=others)


def _with_mail_method(url: str, action: str, requests: tuple[RequestClass, ...]) -> tuple[RequestClass, ...]:
    """A mail target's one action (SEND or READ) is every action's method; another is refused."""
    scheme = url.partition(":")[0]
    for r in requests:
        if r.method not in ("GET", action):
            raise UsageProblem(
                f"usage action {r.name}: a {scheme}:// target's method is {action}, not {r.method}"
            )
    return tuple(replace(r, method=action) for r in requests)


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
