"""A batch job instead of a request load: timed phases, untimed reset and prepare."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, model_validator

from caplab.spec.fields import Strict, as_seconds
from caplab.spec.sut import SeriesName
from caplab.units import DEFAULT_INTERVAL_S


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
    timeout: Annotated[float, BeforeValidator(as_seconds), Field(gt=0)] = 3600.0


class JobSpec(Strict):
    """A batch job instead of a request load (the MIIS paper's staging and synchronisation): before
    each repeat ``reset`` then ``prepare`` (untimed), then each phase timed with the resources
    sampled on the same clock as a load trial."""

    reset: str | None = Field(default=None, pattern=r"\S")
    prepare: str | None = Field(default=None, pattern=r"\S")
    phases: list[PhaseSpec] = Field(min_length=1)
    repeat: int = Field(default=1, ge=1, le=20)
    interval: Annotated[float, BeforeValidator(as_seconds), Field(ge=0.1, le=60)] = DEFAULT_INTERVAL_S
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
