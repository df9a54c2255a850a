"""The ``findings:`` grammar: claims over a study's measured results, as typed syntax.

A finding is a claim in words (``claim:``), the paper's figure beside it (``paper:``, optional) and
exactly one judgement of the data:

    compare:       {metric: capacity, cells: {setup: ssd}, over: {setup: hdd}, ratio: ">1"}
    trend:         {metric: items_per_s, phase: sync, factor: objects, sign: falling}
    limit:         {kind: cpu, cells: {setup: ssd}}          (never: true — no cell is bound by it)
    rank:          {metric: capacity, factor: config, order: [2c-4g, 4c-8g]}   lowest first
    success:       {at_least: 1.0}                           failovers that met the recovery SLO
    no_loss:       true                                      no acknowledged write lost
    consolidation: {resource: cpu, ratio: [0.9, 1.1]}        together / apart

The models are syntax only: whether a selection matches a cell of the study is checked by
``spec/findings.py`` (file:line), and the data judged by ``analysis/findings.py``. They live here,
below both, as the SLO grammar does, so the spec checks a file with the very types the analysis
judges.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

FactorValue = int | float | str | bool
Selection = dict[str, FactorValue | list[FactorValue]]
"""Cells by factor values: ``{setup: ssd, placement: together}``, a list for any of several values
(``{setup: [hdd, hdd-split]}``); empty selects every cell."""

Metric = Literal[
    "capacity",
    "throughput",
    "p99",
    "cpu",
    "items_per_s",
    "recovery",
    "action_s",
    "group_recovery",
    "database_recovery",
    "database_recovery_max",
]
"""What a cell stores that a claim may be about: its capacity (the searched figure with its
replicates' interval, or the rate a fixed load carried), its throughput and p99 (ms) at it, the
CPU its roles used together (% of one host core: what a user or a message costs), a job
phase's items a second (``phase:``), an action's own seconds during a trial (``action_s``: a
rebuild, a switchover), and recovery seconds after a fault — the clients' (``recovery``), the
group's, and the databases' median and slowest (per failover trial)."""

METRICS: tuple[str, ...] = get_args(Metric)
LimitWord = Literal[
    "cpu",
    "host cpu",
    "cpu thread",
    "memory",
    "disk",
    "storage",
    "network",
    "network bandwidth",
    "network round trips",
    "software",
]
"""A limit as a paper names it (``disk``, ``cpu``, ``network``) or as caplab's limit kinds do."""

_BOUND = re.compile(r"^\s*(?P<op><=|>=|<|>)\s*(?P<bound>[0-9.]+)\s*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Relation(_Model):
    """The ratio a comparison expects: beyond a bound (``">1"``), or within ``[low, high]``."""

    op: Literal["<", "<=", ">", ">=", "within"]
    low: float
    high: float

    def __str__(self) -> str:
        if self.op == "within":
            return f"within [{self.low:g}, {self.high:g}]"
        return f"{self.op} {self.low:g}"


def _relation(value: Any) -> Any:
    """``">1"`` or ``[0.9, 1.1]`` as a Relation; anything else says what would do."""
    if isinstance(value, str):
        m = _BOUND.match(value)
        if m is None:
            raise ValueError(f"{value!r}: expected a bound such as '>1' or '<=0.8', or [low, high]")
        bound = float(m.group("bound"))
        return {"op": m.group("op"), "low": bound, "high": bound}
    if isinstance(value, list | tuple):
        if len(value) != 2 or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            raise ValueError("a range is two numbers, [low, high]")
        if value[0] > value[1]:
            raise ValueError(f"[{value[0]}, {value[1]}]: low is above high")
        return {"op": "within", "low": float(value[0]), "high": float(value[1])}
    return value


RatioText = Annotated[Relation, BeforeValidator(_relation)]


class _OnMetric(_Model):
    metric: Metric
    phase: str | None = None
    """The job phase whose ``items_per_s`` the claim is about."""

    @model_validator(mode="after")
    def _phase_with_items(self) -> _OnMetric:
        if (self.metric == "items_per_s") != (self.phase is not None):
            raise ValueError("phase: goes with metric items_per_s (a job's phase), and only with it")
        return self


class CompareClaim(_OnMetric):
    """``cells`` against ``over``: the ratio of their figures, expected as ``ratio``. Each side is
    one cell; with ``per: FACTOR``, one cell for each of its values, every one judged."""

    cells: Selection
    over: Selection
    ratio: RatioText
    per: str | None = None


class TrendClaim(_OnMetric):
    """The metric's least-squares slope across a numeric factor, over the selected cells."""

    factor: str
    sign: Literal["rising", "falling", "flat"]
    cells: Selection = Field(default_factory=dict)
    tolerance: Annotated[float, Field(gt=0, lt=1)] = 0.10
    """For ``flat``: the change over the factor's range, as a share of the mean, still flat."""


class LimitClaim(_Model):
    """The kind of limit every selected cell is bound by — or, ``never: true``, none is."""

    kind: LimitWord
    cells: Selection = Field(default_factory=dict)
    never: bool = False
    resource: str | None = None
    """A resource the limit must name as well (``cpu:messagebox``, ``volume:log``)."""


class RankClaim(_OnMetric):
    """The cells taking ``factor``'s values in ``order``, lowest figure first."""

    factor: str
    order: Annotated[list[FactorValue], Field(min_length=2)]
    cells: Selection = Field(default_factory=dict)


class SuccessClaim(_Model):
    """The share of failovers that met the study's recovery SLO, over the selected cells."""

    at_least: Annotated[float, Field(ge=0, le=1)]
    cells: Selection = Field(default_factory=dict)


class NoLossClaim(_Model):
    """No write the clients saw acknowledged was missing afterwards (the ledger)."""

    cells: Selection = Field(default_factory=dict)


def _no_loss(value: Any) -> Any:
    """``no_loss: true`` is the whole study; a mapping selects cells."""
    if value is True:
        return {}
    if value is False:
        raise ValueError("no_loss: true (or {cells: …}); leave the finding out to claim nothing")
    return value


class ConsolidationClaim(_Model):
    """The combined server's use of a resource over the sum of the roles' apart, as ``ratio``."""

    resource: str = "cpu"
    ratio: RatioText
    cells: Selection = Field(default_factory=dict)


KINDS = ("compare", "trend", "limit", "rank", "success", "no_loss", "consolidation")


class Finding(_Model):
    """One claim and the one judgement that tests it."""

    claim: Annotated[str, Field(min_length=1)]
    paper: str | int | float | None = None
    """The paper's figure or words beside ours (its hardware, not this machine)."""
    compare: CompareClaim | None = None
    trend: TrendClaim | None = None
    limit: LimitClaim | None = None
    rank: RankClaim | None = None
    success: SuccessClaim | None = None
    no_loss: Annotated[NoLossClaim | None, BeforeValidator(_no_loss)] = None
    consolidation: ConsolidationClaim | None = None

    @model_validator(mode="after")
    def _one_judgement(self) -> Finding:
        given = [k for k in KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            said = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(f"a finding needs exactly one of {', '.join(KINDS)} ({said})")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    @property
    def judgement(self) -> Judgement:
        """The one judgement the finding gives."""
        given = (self.compare, self.trend, self.limit, self.rank, self.success, self.no_loss)
        return next((j for j in given if j is not None), self.consolidation) or _never()


Judgement = (
    CompareClaim | TrendClaim | LimitClaim | RankClaim | SuccessClaim | NoLossClaim | ConsolidationClaim
)


def _never() -> Judgement:
    raise AssertionError("a validated finding has one judgement")


class StudyFindings(_Model):
    """A study's ``findings:`` section, validated on its own (the key path starts at findings)."""

    findings: list[Finding] = Field(default_factory=list)


def selects(selection: Selection, factors: dict[str, Any]) -> bool:
    """Whether a cell's factors take every value the selection names (``1`` and ``"1"`` alike: a
    YAML author writes ``{hosts: 1}`` for a factor listed as ``[1, 2]`` or ``["1", "2"]``)."""
    return all(
        name in factors
        and any(same_value(factors[name], w) for w in (want if isinstance(want, list) else [want]))
        for name, want in selection.items()
    )


def same_value(have: Any, want: Any) -> bool:
    return bool(have == want or str(have) == str(want))


def parse_findings(raw: object) -> list[Finding]:
    """The findings stored with a study (the file as written, validated when it was loaded): each
    one that still validates — a report is written whatever an older file holds."""
    if not isinstance(raw, list):
        return []
    found: list[Finding] = []
    for item in raw:
        try:
            found.append(Finding.model_validate(item))
        except ValidationError:
            continue
    return found
