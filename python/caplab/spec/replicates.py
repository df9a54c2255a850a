"""How many times each cell runs and in what order: ``replicates:`` (a count, or enough replicates
for an interval of a given width), ``order:`` and ``seed:``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from caplab.spec.fields import Strict, as_fraction

MAX_REPLICATES = 20

Order = Literal["interleaved", "sequential"]
"""``interleaved``: the study's runs (each a cell's replicate) in a seeded random order, so drift of
the machine falls on every configuration alike; ``sequential``: cell after cell, each cell's
replicates back to back, in matrix order."""


class ReplicatesSpec(Strict):
    """``replicates: {min: 3, max: 10, until: 5%}``: replicates are added to a cell until its
    capacity's 95 % interval is within ``until`` of the capacity (half its width, relative), or
    ``max`` replicates have run."""

    min: int = Field(default=3, ge=2, le=MAX_REPLICATES)
    """The replicates every cell runs first (two at least: one run has no interval)."""
    max: int = Field(default=10, ge=2, le=MAX_REPLICATES)
    until: Annotated[float, BeforeValidator(as_fraction), Field(gt=0, lt=1)]

    @model_validator(mode="after")
    def _min_within_max(self) -> ReplicatesSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is more than max ({self.max})")
        return self


def _replicates_kind(value: Any) -> str:
    return "ReplicatesSpec" if isinstance(value, dict | ReplicatesSpec) else "int"


ReplicatesField = Annotated[
    Annotated[int, Tag("int"), Field(ge=1, le=MAX_REPLICATES)]
    | Annotated[ReplicatesSpec, Tag("ReplicatesSpec")],
    Discriminator(_replicates_kind),
]
"""A fixed count, or ``{min, max, until}``."""
