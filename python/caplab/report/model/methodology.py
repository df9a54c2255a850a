"""The methodology checklist as results.json holds it: the stored study document read into the
facts analysis/methodology.py grades (``StudyEvidence``), and its graded items put back as JSON.

The settings are the study's as validated (every default filled in, the first cell's values for a
factor's placeholder), or for a study stored before caplab kept those, the file as written with
the spec's defaults; the cells' trials, flags and placement are what the runner stored; the
headline figures and their intervals are the capacity table's (``Measured.capacity``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from caplab.analysis.drift import Run
from caplab.analysis.methodology import grade_study
from caplab.analysis.methodology_types import (
    CellEvidence,
    Check,
    Grade,
    HeadlineFigure,
    Principle,
    StudyEvidence,
    TrialEvidence,
)
from caplab.engine.result import IntervalSnapshot
from caplab.json_types import JsonObject, integer, member, members, number, optional_member, text, truthy
from caplab.report.model.scenario import study_spec
from caplab.report.model.types import (
    CapacityEntry,
    CellResult,
    Measured,
    MethodologyGrade,
    MethodologyItem,
    PrincipleKey,
)
from caplab.store.document import CellRecord, StudyDocument, TrialRecord
from caplab.units import is_number

PRINCIPLES: dict[Principle, tuple[PrincipleKey, str]] = {
    Principle.REPETITION: ("repetition", "Repeated experiments"),
    Principle.INTERVALS: ("intervals", "Intervals on the figures"),
    Principle.ORDER: ("order", "Randomised order"),
    Principle.DRIFT: ("drift", "Drift of the machine"),
    Principle.STEADY_STATE: ("steady_state", "Warm-up and steady state"),
    Principle.GENERATOR: ("generator", "Load generator"),
    Principle.ENVIRONMENT: ("environment", "Environment recorded"),
    Principle.UNITS: ("units", "Units"),
    Principle.COST: ("cost", "Cost"),
}
"""Each principle's key in results.json and its name in the report."""
GRADES: dict[Grade, MethodologyGrade] = {Grade.PASS: "pass", Grade.WARN: "warn", Grade.FAIL: "fail"}


def study_methodology(document: StudyDocument, measured: Measured) -> list[MethodologyItem]:
    """Every principle graded from the study's record (see the module docstring)."""
    return [_item(check) for check in grade_study(study_evidence(document, measured))]


def _item(check: Check) -> MethodologyItem:
    key, title = PRINCIPLES[check.principle]
    change = check.change
    return {
        "principle": key,
        "title": title,
        "grade": GRADES[check.grade],
        "reason": check.reason,
        "change": {"setting": change.setting, "why": change.why} if change is not None else None,
    }


class _Settings:
    """The study's settings: as validated where the store kept them, else as written."""

    def __init__(self, validated: JsonObject | None, written: JsonObject) -> None:
        self.source = validated if validated is not None else written

    def section(self, name: str) -> JsonObject | None:
        return optional_member(self.source, name)

    def integer(self, section: JsonObject | None, key: str, default: int) -> int:
        value = (section or {}).get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    def replicates(self) -> int:
        """The replicates every cell ran: the count, or with ``{min, max, until}`` its ``min``."""
        budget = self.section("replicates")
        return (
            self.integer(budget, "min", 1)
            if budget is not None
            else self.integer(self.source, "replicates", 1)
        )


def study_evidence(document: StudyDocument, measured: Measured) -> StudyEvidence:
    """The facts the checklist grades, from the stored document and what the report measured."""
    study = document.study
    settings = _Settings(study.validated, study_spec(study))
    load, search, cost = settings.section("load"), settings.section("search"), settings.section("cost")
    isolation = settings.source.get("isolation")
    headlines = {e["cell"]: e for e in measured["capacity"]}
    for e in measured["jobs"]["capacity"] if measured["jobs"] else []:
        headlines.setdefault(e["cell"], e)
    results = {c["index"]: c for c in measured["cells"]}
    scenario = measured["scenario"]
    cells = tuple(
        _cell(raw, results[raw.index], headlines.get(raw.index), priced=cost is not None)
        for raw in document.cells
        if raw.index in results
    )
    return StudyEvidence(
        replicates=settings.replicates(),
        repeat=settings.integer(load, "repeat", 1),
        search_repeats=settings.integer(search, "repeats", 3) if search is not None else None,
        job=settings.section("job") is not None,
        closed_model=scenario["model"] == "closed",
        think_s=scenario["think_s"] or 0.0,
        usage_profile=bool(scenario.get("usage")),
        isolation=isolation if isinstance(isolation, str) else ("cpus" if isolation else None),
        cost=cost is not None,
        currency=text(cost, "currency") if cost is not None else None,
        environment=dict(study.environment),
        cells=cells,
        slo=tuple(scenario["slo"]),
        profiles=tuple(str(p) for p in member(settings.source, "profiles")),
        factors=dict(document.cells[0].factors) if document.cells else {},
        confirm_s=number(search, "confirm") if search is not None else None,
        runs=study_runs(document.cells),
        order=text(settings.source, "order"),
        seed=integer(settings.source, "seed"),
    )


def study_runs(cells: Sequence[CellRecord]) -> tuple[Run, ...]:
    """Every replicate's figure with its start time, as the cells stored them: a searched cell's
    capacity (each replicate that found one), a fixed-load cell's median latency; a cell run once
    (no replicates kept) or a replicate stored before caplab kept its start time gives none."""
    runs: list[Run] = []
    for cell in cells:
        capacity = cell.metrics.part("capacity") or {}
        key = "capacity_users" if capacity.get("model") == "closed" else "capacity_rps"
        for r in members(capacity, "replicates"):
            at, value = _seconds(text(r, "started_at")), number(r, key)
            if truthy(r, "found") and at is not None and value is not None:
                runs.append(Run(cell.index, at, value, higher_is_faster=True))
        for r in members(cell.metrics.part("replicated") or {}, "replicates"):
            at, value = _seconds(text(r, "started_at")), number(member(r, "latency_ms"), "p50")
            if at is not None and value is not None:
                runs.append(Run(cell.index, at, value, higher_is_faster=False))
    return tuple(runs)


def _seconds(at: str | None) -> float | None:
    """An ISO time as seconds since the epoch (None when absent or unreadable)."""
    try:
        return datetime.fromisoformat(at).timestamp() if at else None
    except ValueError:
        return None


def _measured_trial(trial: TrialRecord) -> bool:
    """A trial a cell's figures come from: not one of a search's probes (bracket, bisect)."""
    return not trial.kind.startswith("search:") or trial.kind == "search:confirm"


def _intervals(trial: TrialRecord) -> tuple[IntervalSnapshot, ...]:
    """The trial's interval series as the engine wrote it (empty where it is not in that shape)."""
    try:
        return tuple(IntervalSnapshot.from_dict(dict(i)) for i in trial.intervals)
    except (KeyError, TypeError):
        return ()


def _trial(trial: TrialRecord) -> TrialEvidence:
    return TrialEvidence(
        warmup_s=trial.warmup_s,
        duration_s=trial.duration_s,
        intervals=_intervals(trial),
        generator_saturated=truthy(trial.generator, "saturated"),
        throughput=trial.throughput,
    )


def _figure(entry: CapacityEntry | None, cell: CellResult) -> HeadlineFigure | None:
    if entry is None or not is_number(entry["value"]):
        return None
    low, high = entry["ci95"] if len(entry["ci95"]) == 2 else (None, None)
    searched, replicated = cell["metrics"]["capacity"], cell["metrics"]["replicated"]
    runs = [r["throughput"] for r in replicated["runs"]] if replicated and not searched else []
    return HeadlineFigure(
        value=entry["value"],
        unit=entry["unit"],
        interval=entry["interval"],
        low=low,
        high=high,
        replicates=entry["replicates"],
        replicate_values=tuple(searched.get("replicate_values", []))
        if searched
        else tuple(v for v in runs if v is not None),
    )


def _cell(raw: CellRecord, cell: CellResult, headline: CapacityEntry | None, *, priced: bool) -> CellEvidence:
    placement: Mapping[str, object] = raw.metrics.part("placement") or {}
    cost = cell["cost"]
    probes = [t for t in raw.trials if not _measured_trial(t)]
    return CellEvidence(
        index=raw.index,
        label=cell["label"],
        status=raw.status,
        started_at=raw.started_at,
        trials=tuple(_trial(t) for t in raw.trials if _measured_trial(t)),
        steady=raw.metrics.steady,
        steady_notes=tuple(raw.metrics.steady_notes),
        generator_saturated=raw.metrics.generator_saturated,
        figure=_figure(headline, cell),
        generator_cpus=_cpus(placement.get("generator")),
        system_cpus=_cpus(placement.get("system")),
        placement=cell.get("placement"),
        emulated_hardware=cell["hardware"] is not None,
        volumes=len(cell["volumes"]),
        priced=(cost is not None and cost["total"] is not None and not cost["unpriced"]) if priced else None,
        search_probes_saturated=sum(1 for t in probes if truthy(t.generator, "saturated")),
    )


def _cpus(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
