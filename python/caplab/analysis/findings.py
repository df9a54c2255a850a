"""A study's findings judged from its data: each claim ``reproduced``, ``contradicted`` or
``inconclusive``, with the figures behind the verdict and a line that says why.

A claim is a hypothesis about the configurations, so it is judged the way a decision is (measurement
rule 6): with the cells' 95 % intervals, not their means alone. A claim is reproduced only when the
whole interval of what it rests on (a ratio, a slope, each cell's order) agrees with it, contradicted
only when the whole interval disagrees, and inconclusive when the interval straddles the line — or
when the study did not measure what the claim needs. A cell without an interval (one run, no
replicates) counts as its point value, and the reason says so.

The inputs are plain figures per cell (``CellFigures``), built by the report from what each cell
stored; the claims are the findings grammar's types (``caplab.grammar.findings``). Nothing here
reads a store or writes text for a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from caplab.analysis.finding_trend import judge_trend
from caplab.analysis.finding_types import (
    CellFigures,
    Estimate,
    Evidence,
    Judged,
    Placement,
    Verdict,
    cell_evidence,
    combine,
    judge_relation,
    reading_of,
)
from caplab.analysis.limit_kind import LimitKind
from caplab.analysis.replicates import overlap
from caplab.grammar.findings import (
    CompareClaim,
    ConsolidationClaim,
    FactorValue,
    Finding,
    LimitClaim,
    NoLossClaim,
    RankClaim,
    Selection,
    SuccessClaim,
    TrendClaim,
    parse_findings,
    selects,
)

__all__ = [
    "CellFigures",
    "Estimate",
    "Evidence",
    "Judged",
    "Placement",
    "StudyFigures",
    "Verdict",
    "judge",
    "judge_all",
    "parse_findings",
]


@dataclass(frozen=True)
class StudyFigures:
    """What the findings are judged against: every cell's figures, and each consolidation pair."""

    cells: Sequence[CellFigures]
    placements: Sequence[Placement] = field(default_factory=tuple)

    def select(self, selection: Selection) -> list[CellFigures]:
        return [c for c in self.cells if selects(selection, dict(c.factors))]


def judge_all(findings: Sequence[Finding], study: StudyFigures) -> list[Judged]:
    return [judge(f, study) for f in findings]


def judge(finding: Finding, study: StudyFigures) -> Judged:
    """One finding's verdict, figures and reason."""
    j = finding.judgement
    if isinstance(j, CompareClaim):
        verdict, reason, figures, estimates = _compare(j, study)
    elif isinstance(j, TrendClaim):
        verdict, reason, figures, estimates = judge_trend(j, study.select(j.cells))
    elif isinstance(j, RankClaim):
        verdict, reason, figures, estimates = _rank(j, study)
    elif isinstance(j, LimitClaim):
        verdict, reason, figures, estimates = _limit(j, study.select(j.cells))
    elif isinstance(j, SuccessClaim):
        verdict, reason, figures, estimates = _success(j, study.select(j.cells))
    elif isinstance(j, NoLossClaim):
        verdict, reason, figures, estimates = _no_loss(study.select(j.cells))
    else:
        verdict, reason, figures, estimates = _consolidation(j, study)
    return Judged(
        claim=finding.claim,
        paper=finding.paper,
        kind=finding.kind,
        verdict=verdict,
        reason=reason,
        figures=tuple(figures),
        estimates=tuple(estimates),
    )


Outcome = tuple[Verdict, str, list[Evidence], list[Estimate]]


def _one(study: StudyFigures, selection: Selection) -> CellFigures | None:
    matched = study.select(selection)
    return matched[0] if len(matched) == 1 else None


def _compare(j: CompareClaim, study: StudyFigures) -> Outcome:
    """The ratio of the two sides' figures, its interval by interval arithmetic (``a.low /
    b.high`` to ``a.high / b.low``: at least 90 % when each end is a 95 % interval)."""
    groups: list[Selection] = [{}]
    if j.per is not None:
        seen: list[FactorValue] = []
        for cell in study.cells:
            value = cell.factors.get(j.per)
            if isinstance(value, FactorValue) and value not in seen:
                seen.append(value)
        groups = [{j.per: v} for v in seen]
    verdicts: list[Verdict] = []
    reasons: list[str] = []
    figures: list[Evidence] = []
    estimates: list[Estimate] = []
    for group in groups:
        a, b = _one(study, {**j.cells, **group}), _one(study, {**j.over, **group})
        tag = f" at {j.per}={next(iter(group.values()))}" if group else ""
        ra = reading_of(a, j.metric, j.phase) if a else None
        rb = reading_of(b, j.metric, j.phase) if b else None
        if a and ra:
            figures.append(cell_evidence(a, ra))
        if b and rb:
            figures.append(cell_evidence(b, rb))
        if a is None or b is None or ra is None or rb is None or rb.value <= 0:
            verdicts.append(Verdict.INCONCLUSIVE)
            reasons.append(f"no {j.metric} measured on both sides{tag}")
            continue
        # An interval of the divisor reaching 0 leaves the ratio unbounded above.
        high = ra.high / rb.low if rb.low > 0 else math.inf
        ratio = Estimate(f"ratio{tag}", ra.value / rb.value, ra.low / rb.high, high)
        estimates.append(ratio)
        verdict = judge_relation(j.ratio, ratio.low, ratio.high)
        verdicts.append(verdict)
        point = (
            "" if ra.has_interval and rb.has_interval else " (a side without an interval: its point value)"
        )
        reasons.append(f"{j.metric} ratio{tag} {ratio.text()}, expected {j.ratio}{point}")
    verdict = combine(verdicts)
    return verdict, _summary(verdict, reasons, verdicts), figures, estimates


def _summary(verdict: Verdict, reasons: list[str], verdicts: list[Verdict]) -> str:
    """The reasons that decide the verdict: all of them when they agree, else those that differ."""
    if verdict == Verdict.REPRODUCED or len(reasons) == 1:
        return "; ".join(reasons)
    return "; ".join(r for r, v in zip(reasons, verdicts, strict=True) if v == verdict)


def _rank(j: RankClaim, study: StudyFigures) -> Outcome:
    """Cells in the claimed order, lowest first: reproduced when each interval lies wholly below
    the next one's; contradicted when any two do not overlap and stand the other way round."""
    ranked: list[tuple[CellFigures, object]] = []
    figures: list[Evidence] = []
    spans: list[tuple[float, float]] = []
    points = ""
    for value in j.order:
        cell = _one(study, {**j.cells, j.factor: value})
        reading = reading_of(cell, j.metric, j.phase) if cell else None
        if cell is None or reading is None:
            return Verdict.INCONCLUSIVE, f"no {j.metric} measured for {j.factor}={value}", figures, []
        figures.append(cell_evidence(cell, reading))
        ranked.append((cell, value))
        spans.append((reading.low, reading.high))
        if not reading.has_interval:
            points = " (cells without an interval: their point values)"
    for i in range(len(spans)):
        for k in range(i + 1, len(spans)):
            if spans[i][0] > spans[k][1]:
                return (
                    Verdict.CONTRADICTED,
                    f"{j.factor}={ranked[i][1]} ({figures[i].text()}) is above "
                    f"{j.factor}={ranked[k][1]} ({figures[k].text()}), the claim has it below",
                    figures,
                    [],
                )
    tied = [
        f"{ranked[i][1]} and {ranked[i + 1][1]}"
        for i in range(len(spans) - 1)
        if overlap(spans[i], spans[i + 1])
    ]
    order = " < ".join(str(v) for _, v in ranked)
    if tied:
        return Verdict.INCONCLUSIVE, f"intervals overlap ({'; '.join(tied)}): not ranked", figures, []
    return Verdict.REPRODUCED, f"{j.metric}: {order}, each interval below the next{points}", figures, []


LIMIT_WORDS: Mapping[str, frozenset[LimitKind]] = {
    "cpu": frozenset({LimitKind.HOST_CPU, LimitKind.CPU, LimitKind.CPU_THREAD}),
    "host cpu": frozenset({LimitKind.HOST_CPU}),
    "cpu thread": frozenset({LimitKind.CPU_THREAD}),
    "memory": frozenset({LimitKind.MEMORY}),
    "disk": frozenset({LimitKind.STORAGE}),
    "storage": frozenset({LimitKind.STORAGE}),
    "network": frozenset({LimitKind.NETWORK_BANDWIDTH, LimitKind.NETWORK_ROUND_TRIPS}),
    "network bandwidth": frozenset({LimitKind.NETWORK_BANDWIDTH}),
    "network round trips": frozenset({LimitKind.NETWORK_ROUND_TRIPS}),
    "software": frozenset({LimitKind.SOFTWARE}),
}
"""A claim's limit word, as the kinds ``LimitKind.of`` names (a paper's ``disk`` is storage)."""
NOT_A_LIMIT = frozenset({LimitKind.GENERATOR, LimitKind.UNKNOWN, LimitKind.NOT_REACHED})
"""Kinds that name no limit of the system's: the generator stopped it, or nothing was reached."""


def _limit(j: LimitClaim, cells: list[CellFigures]) -> Outcome:
    """Every selected cell's limit is the kind (or, ``never``, none is); a cell whose limit was not
    named leaves the claim open unless another cell already contradicts it."""
    kinds = LIMIT_WORDS[j.kind]
    named = [c for c in cells if c.limit is not None and c.limit not in NOT_A_LIMIT]
    hits = [c for c in named if c.limit in kinds and (j.resource is None or c.limit_resource == j.resource)]
    figures = [Evidence(c.label, None, None, None, c.limit_text) for c in cells]
    unnamed = [c.label for c in cells if c not in named]
    want = f"{j.kind}{f' ({j.resource})' if j.resource else ''}"
    if j.never:
        if hits:
            return Verdict.CONTRADICTED, f"bound by {want}: {_labels(hits)}", figures, []
        if unnamed:
            return Verdict.INCONCLUSIVE, f"no limit named for {', '.join(unnamed)}", figures, []
        return Verdict.REPRODUCED, f"no cell bound by {want} ({len(named)} limits named)", figures, []
    if unnamed:
        return Verdict.INCONCLUSIVE, f"no limit named for {', '.join(unnamed)}", figures, []
    if len(hits) == len(cells):
        return Verdict.REPRODUCED, f"every cell bound by {want}", figures, []
    if not hits:
        return Verdict.CONTRADICTED, f"no cell bound by {want}: {_labels(named)}", figures, []
    others = [c for c in named if c not in hits]
    return (
        Verdict.INCONCLUSIVE,
        f"{len(hits)} of {len(cells)} bound by {want}; {_labels(others)}",
        figures,
        [],
    )


def _labels(cells: list[CellFigures]) -> str:
    return ", ".join(f"{c.label} by {c.limit_text}" for c in cells)


def _success(j: SuccessClaim, cells: list[CellFigures]) -> Outcome:
    """k of K failovers met the recovery SLO, over the selected cells, against the share claimed."""
    counted = [c for c in cells if c.failovers]
    figures = [Evidence(c.label, c.successes, None, None, f"{c.successes}/{c.failovers}") for c in counted]
    k = sum(c.successes or 0 for c in counted)
    n = sum(c.failovers or 0 for c in counted)
    if n == 0:
        return Verdict.INCONCLUSIVE, "no failover judged against a recovery SLO", figures, []
    verdict = Verdict.REPRODUCED if k / n >= j.at_least else Verdict.CONTRADICTED
    return (
        verdict,
        f"{k}/{n} failovers met the recovery SLO ({k / n:.0%}; claimed ≥ {j.at_least:.0%})",
        figures,
        [],
    )


def _no_loss(cells: list[CellFigures]) -> Outcome:
    """No write the clients saw acknowledged was missing from the database afterwards."""
    ledgered = [c for c in cells if c.acknowledged is not None]
    figures = [
        Evidence(c.label, float(c.lost or 0), None, None, f"{c.lost or 0} of {c.acknowledged} lost")
        for c in ledgered
    ]
    acknowledged = sum(c.acknowledged or 0 for c in ledgered)
    lost = sum(c.lost or 0 for c in ledgered)
    if lost:
        where = ", ".join(c.label for c in ledgered if c.lost)
        return (
            Verdict.CONTRADICTED,
            f"{lost} of {acknowledged:,} acknowledged writes lost ({where})",
            figures,
            [],
        )
    if acknowledged == 0:
        return Verdict.INCONCLUSIVE, "no acknowledged write in a ledger to check", figures, []
    return Verdict.REPRODUCED, f"0 of {acknowledged:,} acknowledged writes lost", figures, []


def _consolidation(j: ConsolidationClaim, study: StudyFigures) -> Outcome:
    """Each selected pair's together / apart ratio for the resource, with its interval."""
    pairs = [
        p
        for p in study.placements
        if p.resource.lower() == j.resource.lower() and selects(j.cells, dict(p.factors))
    ]
    verdicts: list[Verdict] = []
    reasons: list[str] = []
    estimates: list[Estimate] = []
    for p in pairs:
        if p.ratio is None:
            verdicts.append(Verdict.INCONCLUSIVE)
            reasons.append(f"{p.label}: no {j.resource} measured apart")
            continue
        low, high = (p.low, p.high) if p.low is not None and p.high is not None else (p.ratio, p.ratio)
        ratio = Estimate(f"together/apart {p.label}".strip(), p.ratio, low, high)
        estimates.append(ratio)
        verdicts.append(judge_relation(j.ratio, low, high))
        reasons.append(
            f"{j.resource} together/apart {p.label} {ratio.text()}, expected {j.ratio}".replace("  ", " ")
        )
    if not pairs:
        return Verdict.INCONCLUSIVE, f"no placements compared for {j.resource}", [], []
    verdict = combine(verdicts)
    return verdict, _summary(verdict, reasons, verdicts), [], estimates
