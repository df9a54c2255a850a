"""What a capacity search looks for (the SLO) and what the report sizes for (the goal)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from caplab.grammar import parse_slo
from caplab.spec.fields import Seconds, Strict, as_fraction


def _slo_text(value: Any) -> Any:
    """An SLO that parses, checked with the grammar analysis/slo.py evaluates (caplab.grammar), so
    a bad one is reported where the file gives it."""
    if isinstance(value, str):
        parse_slo(value)  # raises SloError (a ValueError) naming what is wrong
    return value


SloText = Annotated[str, BeforeValidator(_slo_text)]


class SearchSpec(Strict):
    """Find each cell's capacity instead of running a fixed load: the rate (open model) or the
    users (closed model) at which the SLO holds."""

    slo: list[SloText] = Field(default_factory=list)
    precision: Annotated[float, BeforeValidator(as_fraction), Field(gt=0, le=0.5)] = 0.05
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
    headroom: Annotated[float, BeforeValidator(as_fraction), Field(ge=0, lt=1)] = 0.25
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
