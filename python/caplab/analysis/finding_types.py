"""What a finding is judged from and what its judgement says: the cells' figures in, a verdict
with its evidence out (analysis/findings.py judges; the report shows these as they are)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from caplab.grammar.findings import Relation
from caplab.units import num


class Verdict(StrEnum):
    REPRODUCED = "reproduced"
    """The whole interval the claim rests on agrees with it."""
    CONTRADICTED = "contradicted"
    """The whole interval disagrees."""
    INCONCLUSIVE = "inconclusive"
    """The interval straddles the claim's line, or the study did not measure what it needs."""


@dataclass(frozen=True)
class Reading:
    """One cell's figure for a metric: its value, its 95 % interval (the value itself when it has
    none) and the per-run values behind it (replicates or failover trials), which a trend fits."""

    value: float
    low: float
    high: float
    has_interval: bool
    samples: tuple[float, ...] = ()

    @classmethod
    def of(
        cls, value: float, low: float | None = None, high: float | None = None, samples: Sequence[float] = ()
    ) -> Reading:
        if low is None or high is None:
            return cls(value, value, value, False, tuple(samples))
        return cls(value, min(low, value), max(high, value), high > low, tuple(samples))


@dataclass(frozen=True)
class CellFigures:
    """A cell as the findings see it: its factors and the figures it stored."""

    index: int
    label: str
    factors: Mapping[str, object]
    readings: Mapping[str, Reading] = field(default_factory=dict)
    """By metric (``capacity``, ``p99`` …); a job phase's items/s as ``items_per_s:PHASE``."""
    limit: str | None = None
    """The limit's kind (``LimitKind``'s value), None when none was found."""
    limit_resource: str | None = None
    successes: int | None = None
    failovers: int | None = None
    """Failover trials judged against the recovery SLO, and how many met it."""
    acknowledged: int | None = None
    lost: int | None = None
    """Writes the ledger saw acknowledged over the cell's trials, and how many were missing after."""

    @property
    def limit_text(self) -> str:
        if self.limit is None:
            return "no limit named"
        named = self.limit_resource not in (None, self.limit)
        return f"{self.limit} ({self.limit_resource})" if named else self.limit


@dataclass(frozen=True)
class Placement:
    """One consolidation pair: a resource's use together over apart, with its interval."""

    label: str
    factors: Mapping[str, object]
    resource: str
    ratio: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Evidence:
    """One figure a verdict used: a cell's value and interval, or its limit or count in words."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    note: str = ""

    def text(self) -> str:
        if self.value is None or self.low is None or self.high is None:
            return self.note
        if self.low == self.high:
            return num(self.value)
        return f"{num(self.value)} [{num(self.low)}, {num(self.high)}]"


@dataclass(frozen=True)
class Estimate:
    """What the verdict rests on: a ratio or a slope, with its interval (``high`` infinite for a
    ratio whose divisor's interval reaches 0)."""

    name: str
    value: float
    low: float
    high: float

    def text(self) -> str:
        if self.low == self.high:
            return num(self.value)
        high = num(self.high) if math.isfinite(self.high) else "∞"
        return f"{num(self.value)} [{num(self.low)}, {high}]"


@dataclass(frozen=True)
class Judged:
    """A finding's verdict, the reason in one line, and the figures behind it."""

    claim: str
    paper: str | int | float | None
    kind: str
    verdict: Verdict
    reason: str
    figures: tuple[Evidence, ...] = ()
    estimates: tuple[Estimate, ...] = ()


def reading_of(cell: CellFigures, metric: str, phase: str | None) -> Reading | None:
    return cell.readings.get(metric if phase is None else f"{metric}:{phase}")


def cell_evidence(cell: CellFigures, reading: Reading) -> Evidence:
    return Evidence(cell.label, reading.value, reading.low, reading.high)


def judge_relation(relation: Relation, low: float, high: float) -> Verdict:
    """An interval against the relation a claim expects: reproduced when all of it satisfies the
    relation, contradicted when none of it does, inconclusive when it straddles the line."""
    op, a, b = relation.op, relation.low, relation.high
    if op == "within":
        inside, outside = a <= low and high <= b, high < a or low > b
    elif op == ">":
        inside, outside = low > a, high <= a
    elif op == ">=":
        inside, outside = low >= a, high < a
    elif op == "<":
        inside, outside = high < a, low >= a
    else:
        inside, outside = high <= a, low > a
    return Verdict.REPRODUCED if inside else Verdict.CONTRADICTED if outside else Verdict.INCONCLUSIVE


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """Several parts of one claim (a comparison at each size): reproduced when every part is,
    contradicted when any part is, else inconclusive."""
    if verdicts and all(v == Verdict.REPRODUCED for v in verdicts):
        return Verdict.REPRODUCED
    if any(v == Verdict.CONTRADICTED for v in verdicts):
        return Verdict.CONTRADICTED
    return Verdict.INCONCLUSIVE
