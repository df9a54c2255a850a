"""The load a cell sends: open or closed, its timing, and the usage profile that can drive it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, model_validator

from caplab.spec.fields import Seconds, Strict, as_seconds
from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S

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
    duration: Annotated[float, BeforeValidator(as_seconds), Field(gt=0)] = 30.0
    warmup: Seconds = 0.0
    repeat: int = Field(default=1, ge=1)
    threads: int | None = Field(default=None, ge=1)
    connections: int | None = Field(default=None, ge=1)
    timeout: Seconds = DEFAULT_TIMEOUT_S
    interval: Annotated[float, BeforeValidator(as_seconds), Field(ge=0.05, le=60)] = DEFAULT_INTERVAL_S
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
