"""A study's ``findings:``: its claims, validated with the findings grammar and checked against the
study's own matrix, so a claim no cell could judge is a bad study file (``file:line``, exit 2)
rather than an "inconclusive" found hours later.

The grammar is ``caplab.grammar.findings`` (the analysis judges the same types); this module says
what the study can judge: a selection names factors and values the matrix has and matches cells, a
comparison's sides are one cell each, a trend runs along a numeric factor, and the metric is one
the study measures (a job's phase, a failover's recovery, a consolidation's placements).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from caplab.grammar.findings import (
    CompareClaim,
    ConsolidationClaim,
    Finding,
    LimitClaim,
    NoLossClaim,
    RankClaim,
    Selection,
    StudyFindings,
    SuccessClaim,
    TrendClaim,
    same_value,
    selects,
)
from caplab.spec.errors import KeyPath, SpecError, line_of
from caplab.spec.fields import Scalar
from caplab.spec.messages import format_error
from caplab.spec.study import StudyConfig

__all__ = ["Finding", "check_findings"]

RECOVERY_METRICS = frozenset(
    {"recovery", "action_s", "group_recovery", "database_recovery", "database_recovery_max"}
)


def check_findings(
    path: Path, lines: dict[KeyPath, int], raw: Any, matrix: list[dict[str, Scalar]], config: StudyConfig
) -> list[Finding]:
    """The study's findings, each one the matrix can judge; raises SpecError naming file and line."""
    if raw is None:
        return []
    try:
        findings = StudyFindings.model_validate({"findings": raw}).findings
    except ValidationError as e:
        errors = e.errors()
        first = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        raise SpecError(format_error(path, lines, first, {}, {}, StudyFindings)) from e
    for i, finding in enumerate(findings):
        _Check(path, lines, matrix, config, ("findings", i, finding.kind)).finding(finding)
    return findings


class _Check:
    """One finding's judgement against the matrix; ``at`` is its key path in the file."""

    def __init__(
        self,
        path: Path,
        lines: dict[KeyPath, int],
        matrix: list[dict[str, Scalar]],
        config: StudyConfig,
        at: KeyPath,
    ) -> None:
        self.path, self.lines, self.matrix, self.config, self.at = path, lines, matrix, config, at
        self.factors: dict[str, list[Scalar]] = {}
        for cell in matrix:
            for name, value in cell.items():
                if value not in self.factors.setdefault(name, []):
                    self.factors[name].append(value)

    def fail(self, field: tuple[str | int, ...], message: str) -> SpecError:
        loc = (*self.at, *field)
        where = ".".join(str(p) for p in loc)
        return SpecError(f"{self.path}:{line_of(self.lines, loc)}: {where}: {message}")

    def finding(self, finding: Finding) -> None:
        j = finding.judgement
        if isinstance(j, CompareClaim):
            self.compare(j)
        elif isinstance(j, TrendClaim):
            self.metric(j.metric, j.phase)
            self.trend(j)
        elif isinstance(j, RankClaim):
            self.metric(j.metric, j.phase)
            self.rank(j)
        elif isinstance(j, SuccessClaim | NoLossClaim):
            self.cells(j.cells, ("cells",))
            self.failover(j)
        elif isinstance(j, ConsolidationClaim):
            self.cells(j.cells, ("cells",))
            if self.config.consolidation is None:
                raise self.fail((), "the study has no consolidation: (no placements to compare)")
        elif isinstance(j, LimitClaim):
            self.cells(j.cells, ("cells",))

    def failover(self, j: SuccessClaim | NoLossClaim) -> None:
        """A success count needs failovers judged against a recovery SLO; a loss, a ledger."""
        if not self.config.actions:
            raise self.fail((), "the study has no actions: (no failover to count)")
        if isinstance(j, SuccessClaim) and self.config.recovery is None:
            raise self.fail((), "the study has no recovery: SLO (what a failover must meet to succeed)")
        postgres = self.config.target.postgres if self.config.target else None
        if isinstance(j, NoLossClaim) and not (postgres and postgres.ledger):
            raise self.fail((), "no ledger of acknowledged writes: give target.postgres ledger: true")

    def metric(self, metric: str, phase: str | None) -> None:
        """The metric is one the study measures."""
        job = self.config.job
        if metric == "items_per_s":
            phases = [p.name for p in job.phases] if job else []
            if phase not in phases:
                known = f"its phases: {', '.join(phases)}" if phases else "the study has no job:"
                raise self.fail(("phase",), f"{phase!r} is not a phase of the job ({known})")
        elif metric in RECOVERY_METRICS and not self.config.actions:
            raise self.fail(("metric",), f"{metric}: the study has no actions: (no fault to recover from)")
        elif metric in ("throughput", "p99") and job is not None:
            raise self.fail(("metric",), f"{metric}: a job study sends no requests (items_per_s, phase:)")

    def cells(self, selection: Selection, field: tuple[str | int, ...]) -> list[dict[str, Scalar]]:
        """The cells a selection matches: at least one, by factors and values the study has."""
        for name, wanted in selection.items():
            if name not in self.factors:
                known = ", ".join(self.factors) or "none"
                raise self.fail((*field, name), f"{name!r} is not a factor (the factors: {known})")
            for value in wanted if isinstance(wanted, list) else [wanted]:
                if not any(same_value(v, value) for v in self.factors[name]):
                    values = _listed(self.factors[name])
                    raise self.fail((*field, name), f"{value!r} is not a value of {name} ({values})")
        matched = [cell for cell in self.matrix if selects(selection, dict(cell))]
        if not matched:
            raise self.fail(field, "no cell of the study has all these values")
        return matched

    def one_cell(
        self,
        selection: Selection,
        field: tuple[str | int, ...],
        hint: str = " (or per: FACTOR for each of its values)",
    ) -> None:
        matched = self.cells(selection, field)
        if len(matched) > 1:
            free = [n for n in self.factors if n not in selection]
            raise self.fail(
                field,
                f"matches {len(matched)} cells: name one value of each of {', '.join(free)}{hint}",
            )

    def factor(self, name: str, field: str) -> list[Scalar]:
        if name not in self.factors:
            known = ", ".join(self.factors) or "none"
            raise self.fail((field,), f"{name!r} is not a factor (the factors: {known})")
        return self.factors[name]

    def compare(self, j: CompareClaim) -> None:
        self.metric(j.metric, j.phase)
        groups: list[Selection] = [{}]
        if j.per is not None:
            if j.per in j.cells or j.per in j.over:
                raise self.fail(("per",), f"{j.per!r} is named in cells: or over: as well")
            groups = [{j.per: v} for v in self.factor(j.per, "per")]
        for group in groups:
            self.one_cell({**j.cells, **group}, ("cells",))
            self.one_cell({**j.over, **group}, ("over",))

    def trend(self, j: TrendClaim) -> None:
        values = self.factor(j.factor, "factor")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise self.fail(("factor",), f"{j.factor!r} is not numeric ({', '.join(map(str, values))})")
        if j.factor in j.cells:
            raise self.fail(("cells", j.factor), "a trend runs along its factor: leave it out of cells:")
        along = {cell[j.factor] for cell in self.cells(j.cells, ("cells",))}
        if len(along) < 3:
            raise self.fail(
                ("factor",), f"a slope's interval needs 3 values of {j.factor} (have {len(along)})"
            )

    def rank(self, j: RankClaim) -> None:
        if j.factor in j.cells:
            raise self.fail(("cells", j.factor), "the order gives this factor's values: leave it out")
        values = self.factor(j.factor, "factor")
        for k, value in enumerate(j.order):
            if not any(same_value(v, value) for v in values):
                raise self.fail(("order", k), f"{value!r} is not a value of {j.factor} ({_listed(values)})")
        for value in j.order:
            self.one_cell({**j.cells, j.factor: value}, ("cells",), "")


def _listed(values: list[Scalar]) -> str:
    return ", ".join(str(v) for v in values)
