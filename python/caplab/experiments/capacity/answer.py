"""`caplab find-capacity` and the `search:` experiment of studies: run the search, name the limit,
and shape the answer (the same JSON in both places)."""

from __future__ import annotations

from dataclasses import dataclass, field

from caplab.analysis.generator import generator_limit
from caplab.analysis.limit import Limit
from caplab.analysis.slo import parse_slo
from caplab.analysis.steady import LittlesLaw
from caplab.collect import MetricsSource, RoleSpec
from caplab.engine import LoadSpec, run
from caplab.experiments.base import PlanRunner, ProgressFn, SamplerSet
from caplab.experiments.capacity.mix import ActionFigures, PerUser
from caplab.experiments.capacity.replicates import INTERVAL_REPLICATES, INTERVAL_SEARCH
from caplab.experiments.capacity.search import CapacitySearch, GeneratorSaturated, Probe, SearchSettings
from caplab.experiments.capacity.trial import OnTrial, TrialLength, TrialProber
from caplab.json_types import JsonDict


@dataclass(frozen=True)
class FindSettings:
    slos: tuple[str, ...]
    precision: float = 0.05
    closed: bool = False
    start: float = 100.0
    maximum: float = 1_000_000.0
    trial: TrialLength = field(default_factory=lambda: TrialLength(3.0, 1.0))
    confirm: TrialLength = field(default_factory=lambda: TrialLength(10.0, 2.0))
    repeats: int = 3


@dataclass(frozen=True)
class CapacityAnswer:
    """What a capacity search found: the load, its interval, the trials behind it and the limit."""

    model: str
    slo: list[str]
    precision: float
    trials: list[Probe]
    found: bool
    message: str | None
    generator_saturated: bool = False
    capacity_rps: float | None = None
    capacity_users: float | None = None
    """Users (closed model): a whole number from one search, a mean over replicates."""
    capacity_at_least: float | None = None
    """When the generator stopped the search: the highest load that passed, a floor for the capacity."""
    ci95: tuple[float, float] | None = None
    search_s: float | None = None
    limit: Limit | None = None
    consistency: str | None = None
    littles_law: LittlesLaw | None = None
    replicate_count: int = 1
    """Searches combined into this answer (``caplab find-capacity --replicates``)."""
    actions: list[ActionFigures] = field(default_factory=list)
    """Each request class (a usage profile's action) over the confirmation trials at capacity."""
    per_user: PerUser | None = None
    """A usage profile's actions per user-second, offered and reached, at capacity."""
    unstable: str | None = None
    """Confirmations above the capacity failed and the search fell back to a load that had passed:
    what failed above it (a stall, a backlog). The capacity holds; the system is unstable above."""

    @property
    def interval(self) -> str | None:
        """What ``ci95`` is: one search's bracket, or a t-interval over replicates."""
        if self.ci95 is None:
            return None
        return INTERVAL_REPLICATES if self.replicate_count > 1 else INTERVAL_SEARCH

    @property
    def capacity_load(self) -> float | None:
        """The load searched over: users (closed model) or the offered rate (open)."""
        return float(self.capacity_users) if self.capacity_users is not None else self.capacity_rps

    def to_dict(self) -> JsonDict:
        """The `--json` object and a study cell's ``capacity`` entry (with ``limit`` and ``trials``)."""
        return {
            "model": self.model,
            "slo": self.slo,
            "precision": self.precision,
            "trials": [p.to_dict() for p in self.trials],
            "trial_count": len(self.trials),
            "found": self.found,
            "message": self.message,
            "generator_saturated": self.generator_saturated,
            "capacity_rps": self.capacity_rps,
            "capacity_users": self.capacity_users,
            "capacity_at_least": self.capacity_at_least,
            "ci95": list(self.ci95) if self.ci95 else None,
            "interval": self.interval,
            "search_s": self.search_s,
            "limit": self.limit,
            "consistency": self.consistency,
            "littles_law": self.littles_law,
            "actions": [a.to_dict() for a in self.actions],
            "per_user": self.per_user.to_dict() if self.per_user else None,
            "unstable": self.unstable,
        }

    def outcome(self) -> JsonDict:
        """What a searched cell's replicate adds to its summary: the answer as ``capacity``, its
        trials as ``search_trials`` and its ``limit`` beside it (the shape replicates merge)."""
        doc = self.to_dict()
        trials, limit = doc.pop("trials"), doc.pop("limit")
        return {"capacity": doc, "search_trials": trials, "limit": limit}


def find_capacity(
    base: LoadSpec,
    settings: FindSettings,
    roles: list[RoleSpec],
    on_trial: OnTrial | None = None,
    on_probe: ProgressFn | None = None,
    metrics: MetricsSource | None = None,
    runner: PlanRunner = run,
    collectors: SamplerSet | None = None,
) -> CapacityAnswer:
    """Searches, then analyses the trials at capacity for the limit; ``runner`` runs each trial's
    plan (the engine here, or load agents on a cluster); ``collectors``, a study cell's, sample
    every trial (else the roles' and metrics' alone)."""
    slos = [parse_slo(s) for s in settings.slos]
    prober = TrialProber(
        base,
        slos,
        roles,
        settings.trial,
        settings.confirm,
        settings.closed,
        on_trial,
        on_probe,
        metrics,
        runner,
        collectors,
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
    model = "closed" if settings.closed else "open"
    slo = [s.text for s in prober.slos]
    try:
        outcome = search.run()
    except GeneratorSaturated as e:
        floor = max((p.load for p in search.probes if p.passed), default=None)
        return _generator_floor(model, slo, settings, search.probes, floor, str(e))
    analysis = prober.analyse(outcome)
    shared = analysis.limit.get("evidence", {}).get("host_shared") if analysis.limit else None
    if shared is not None and outcome.capacity is not None:
        # The host's CPU held the load, but the generator's share of it did as much as the system:
        # what passed is a floor for the system, exactly as when the generator fell behind alone.
        reason = f"the host's CPU was the limit, and not the system's: {shared}"
        answer = _generator_floor(model, slo, settings, search.probes, outcome.capacity, reason)
        if answer.limit is not None and analysis.limit is not None:  # the demands at that load
            answer.limit["evidence"] = {**analysis.limit["evidence"], **answer.limit["evidence"]}
            answer.limit["evidence"]["demands"] = analysis.limit["evidence"].get("demands", [])
        return answer
    return CapacityAnswer(
        model,
        slo,
        settings.precision,
        trials=search.probes,
        found=outcome.found,
        message=outcome.message,
        capacity_rps=outcome.capacity_throughput if settings.closed else outcome.capacity,
        capacity_users=int(outcome.capacity) if settings.closed and outcome.capacity else None,
        ci95=outcome.ci95,
        search_s=outcome.search_s,
        limit=analysis.limit,
        consistency=analysis.consistency,
        littles_law=analysis.littles_law,
        actions=analysis.actions,
        per_user=analysis.per_user,
        unstable=outcome.unstable,
    )


def _generator_floor(
    model: str, slo: list[str], settings: FindSettings, probes: list[Probe], floor: float | None, reason: str
) -> CapacityAnswer:
    """The answer when the generator, not the system, stopped the search: "capacity ≥ X (the
    generator's limit here)", the generator named as the limit, never the system or the host."""
    unit = " users" if settings.closed else "/s"
    return CapacityAnswer(
        model,
        slo,
        settings.precision,
        trials=probes,
        found=False,
        message=(f"capacity ≥ {floor:,.0f}{unit} (the generator's limit here): " if floor else "") + reason,
        generator_saturated=True,
        capacity_at_least=floor,
        limit=generator_limit(floor, unit, reason),
    )
