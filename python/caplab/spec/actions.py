"""What is done to the system during a trial, and what a recovery from it must meet."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from caplab.grammar import parse_condition
from caplab.spec.fields import Strict, as_seconds


class RecoverySpec(Strict):
    """What a successful failover is: every database taking writes again ``within`` the recovery
    SLO of the fault, and — where the replication mode promises it (``lossless``: synchronous) — no
    acknowledged transaction lost. Each trial is judged; the cell reports k of K."""

    within: Annotated[float, BeforeValidator(as_seconds), Field(gt=0)]
    lossless: bool = True


def _condition(value: Any) -> Any:
    """A trigger condition that parses, checked with the grammar analysis/trigger.py evaluates
    (caplab.grammar), so a bad one is reported where the file gives it."""
    if isinstance(value, str):
        parse_condition(value)  # raises TriggerError (a ValueError) naming what is wrong
    return value


class ActionSpec(Strict):
    """Something done to the system during each trial of a fixed load: one of the system's own
    actions (``do: switchover``) or any command (``run: "kill -9 …"``, in the study's directory),
    fired ``at`` seconds after the load starts (warm-up included), or ``when`` a condition first
    holds on an interval (``p99 > 50ms``, ``replay_lag_ms > 100``), or ``after: steady``
    (grammar/condition.py, analysis/trigger.py)."""

    at: Annotated[float, BeforeValidator(as_seconds), Field(ge=0)] | None = None
    when: Annotated[str | None, BeforeValidator(_condition)] = None
    after: Literal["steady"] | None = None
    do: str | None = Field(default=None, pattern=r"\S")
    run: str | None = Field(default=None, pattern=r"\S")
    name: str | None = Field(default=None, pattern=r"\S")
    timeout: Annotated[float, BeforeValidator(as_seconds), Field(gt=0)] = 120.0

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
