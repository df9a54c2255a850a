"""`caplab find-capacity` and the `search:` procedure of studies: run the search, name the limit,
and shape the answer (the same JSON in both places)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from caplab.analysis.capacity import CapacitySearch, GeneratorSaturated, Probe, SearchSettings
from caplab.analysis.probe import OnTrial, TrialProber, TrialShape
from caplab.analysis.slo import parse_slo
from caplab.collect import MetricsSource, RoleSpec
from caplab.load import LoadOptions
from caplab.study.trials import ProgressFn


@dataclass(frozen=True)
class FindSettings:
    slos: tuple[str, ...]
    precision: float = 0.05
    closed: bool = False
    start: float = 100.0
    maximum: float = 1_000_000.0
    trial: TrialShape = field(default_factory=lambda: TrialShape(3.0, 1.0))
    confirm: TrialShape = field(default_factory=lambda: TrialShape(10.0, 2.0))
    repeats: int = 3


def find_capacity(
    base: LoadOptions,
    settings: FindSettings,
    roles: list[RoleSpec],
    on_trial: OnTrial | None = None,
    on_probe: ProgressFn | None = None,
    on_verdict: Any = None,
    metrics: MetricsSource | None = None,
) -> dict[str, Any]:
    """Searches, then analyses; the dict is `caplab find-capacity --json`."""
    slos = [parse_slo(s) for s in settings.slos]

    def record(rec: Any, probe: Probe) -> None:
        if on_trial is not None:
            on_trial(rec, probe)
        if on_verdict is not None:
            on_verdict(probe)

    prober = TrialProber(
        base, slos, roles, settings.trial, settings.confirm, settings.closed, record, on_probe, metrics
    )
    search = CapacitySearch(
        SearchSettings(
            closed=settings.closed,
            start=settings.start,
            maximum=settings.maximum,
            precision=settings.precision,
            confirm_repeats=settings.repeats,
        ),
        prober,
    )
    saturated: str | None = None
    try:
        outcome = search.run()
    except GeneratorSaturated as e:
        saturated = str(e)
        outcome = None
    probes = search.probes
    base_doc: dict[str, Any] = {
        "model": "closed" if settings.closed else "open",
        "slo": [s.text for s in prober.slos],
        "precision": settings.precision,
        "trials": [p.to_dict() for p in probes],
        "trial_count": len(probes),
    }
    if outcome is None:
        return {
            **base_doc,
            "found": False,
            "message": saturated,
            "generator_saturated": True,
            "capacity_rps": None,
            "capacity_users": None,
            "ci95": None,
            "search_s": None,
            "limit": None,
        }
    analysis = prober.analyse(outcome)
    ci = list(outcome.ci95) if outcome.ci95 else None
    return {
        **base_doc,
        "found": outcome.found,
        "message": outcome.message,
        "generator_saturated": False,
        "capacity_rps": outcome.capacity_throughput if settings.closed else outcome.capacity,
        "capacity_users": int(outcome.capacity) if settings.closed and outcome.capacity else None,
        "ci95": ci,
        "search_s": outcome.search_s,
        **analysis,
    }
