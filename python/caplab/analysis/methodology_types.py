"""What the methodology checklist grades and what it answers: the study's record as plain facts
(``StudyEvidence``, built by the report from the stored study document) and one graded item per
principle (``Check``).

The principles are those of Papadopoulos et al., "Methodological Principles for Reproducible
Performance Evaluation in Cloud Computing" (TSE 2019), as they apply to a capacity study: repeated
experiments, intervals on the figures, randomised order, warm-up and steady state, a valid load
generator, the environment recorded, units, cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from caplab.analysis.drift import Run
from caplab.engine.result import IntervalSnapshot

IntervalKind = Literal["search", "replicates"]
"""One search's bracket, or a 95 % t-interval over replicates (the only confidence interval)."""


class Grade(Enum):
    """How the study meets a principle: ``fail`` when its figures cannot be trusted on that count,
    ``warn`` when they can with a caveat the reader must know."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


class Principle(Enum):
    """One item of the checklist, in the order the report lists them."""

    REPETITION = "repetition"
    INTERVALS = "intervals"
    ORDER = "order"
    DRIFT = "drift"
    STEADY_STATE = "steady_state"
    GENERATOR = "generator"
    ENVIRONMENT = "environment"
    UNITS = "units"
    COST = "cost"


@dataclass(frozen=True)
class Change:
    """What to change in the study file: ``setting`` is YAML the study parser accepts (merged into
    the file, it validates: tests check each one), None where no key of the file can fix it yet."""

    setting: str | None
    why: str


@dataclass(frozen=True)
class Check:
    """One principle graded, the reason read from the study's record, and what to change."""

    principle: Principle
    grade: Grade
    reason: str
    change: Change | None = None


@dataclass(frozen=True)
class TrialEvidence:
    """A measured trial (fixed load, a search's confirmation, a job's run): not a search probe."""

    warmup_s: float
    duration_s: float
    intervals: tuple[IntervalSnapshot, ...]
    generator_saturated: bool
    throughput: float | None


@dataclass(frozen=True)
class HeadlineFigure:
    """The figure a configuration is rated by (its capacity, else its throughput at a fixed load)
    with the interval the report gives it."""

    value: float
    unit: str
    interval: IntervalKind | None
    low: float | None
    high: float | None
    replicates: int
    replicate_values: tuple[float, ...] = ()

    @property
    def has_interval(self) -> bool:
        return self.interval is not None and self.low is not None and self.high is not None


@dataclass(frozen=True)
class CellEvidence:
    """One cell as it was stored: when it started, its measured trials and the flags it kept."""

    index: int
    label: str
    status: str
    started_at: str | None
    trials: tuple[TrialEvidence, ...]
    steady: bool | None
    steady_notes: tuple[str, ...]
    generator_saturated: bool
    figure: HeadlineFigure | None
    generator_cpus: str | None
    """Where the generator ran (None: on every CPU, shared with the system, or not recorded)."""
    system_cpus: str | None
    placement: str | None
    """The placement in the runner's words (None for a cell that never started its system)."""
    emulated_hardware: bool
    volumes: int
    """Profile volumes the cell's roles wrote to (their disks' figures depend on the host's)."""
    priced: bool | None
    """None without ``cost:`` in the study; False when its configuration had no price."""
    search_probes_saturated: int = 0


@dataclass(frozen=True)
class StudyEvidence:
    """The study's record as the checklist reads it: the settings it ran with (as validated, every
    default filled in), the host it recorded and its cells."""

    replicates: int
    repeat: int
    """``load.repeat``: fixed-load trials per replicate."""
    search_repeats: int | None
    """``search.repeats``: confirmation trials at the capacity (None: no search)."""
    job: bool
    closed_model: bool
    think_s: float
    usage_profile: bool
    isolation: str | None
    """``shared``, ``cpus`` (given explicitly) or None (the default placement)."""
    cost: bool
    """The study gives prices (``cost:``)."""
    currency: str | None
    environment: Mapping[str, object]
    cells: tuple[CellEvidence, ...]
    slo: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    factors: Mapping[str, object] = field(default_factory=dict)
    """The first cell's factors: an example the changes can name."""
    interval_s: float = 1.0
    """The interval series' resolution (``load.interval``)."""
    confirm_s: float | None = None
    """``search.confirm`` as written (None: the confirmation trials last ``load.duration``)."""
    runs: tuple[Run, ...] = ()
    """Every replicate's figure and start time, by cell (what the drift check reads)."""
    order: str | None = None
    """The order the runs were made in, ``interleaved`` or ``sequential`` (None: a study stored
    before caplab recorded it, which ran cell after cell)."""
    seed: int | None = None
    """The seed an interleaved order was drawn from."""

    @property
    def ran(self) -> tuple[CellEvidence, ...]:
        """The cells that started (a cell that failed before measuring still took its turn)."""
        return tuple(c for c in self.cells if c.started_at is not None)

    @property
    def figures(self) -> tuple[HeadlineFigure, ...]:
        return tuple(c.figure for c in self.cells if c.figure is not None)


def cells_text(cells: Sequence[CellEvidence], most: int = 3) -> str:
    """``#0 workers=1, #2 workers=3`` (and how many more)."""
    named = [f"#{c.index} {c.label}".strip() for c in cells[:most]]
    more = f" and {len(cells) - most} more" if len(cells) > most else ""
    return ", ".join(named) + more


def flow(value: object) -> str:
    """A scalar written so YAML reads it back as the same value (JSON is YAML's flow style)."""
    return json.dumps(value, ensure_ascii=False)
