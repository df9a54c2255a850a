"""The consolidation table (the Exchange paper's test 2) from a study with ``consolidation:``: each
cell together set beside its cell apart (the same factors otherwise), per resource, from each
trial's means over its measured window.

A searched cell's trials ran at many loads: only its confirmation trials (at its capacity) count,
and as the two placements' capacities differ, the combined server's CPU is scaled to the load the
single-role servers carried (CPU per user, or per request/s, times their load) — the paper compared
the two under the same load. Memory is compared as measured: it does not grow in proportion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from caplab.analysis.consolidation import compare
from caplab.analysis.scope import role_scope
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.json_types import JsonObject, member, optional_member
from caplab.report.model.cells import TrialKey, trial_key
from caplab.report.model.types import ConsolidationEntry, Factors, PaperConsolidation
from caplab.store.document import CellRecord, TrialRecord
from caplab.units import is_number

RESOURCES = (("CPU", "cpu_percent", "% of a core"), ("memory", "rss_mb", "MB"))
"""What is compared, as the roles' sum: CPU (100 = one host core, whatever the profile) and the
resident memory of their processes."""


def consolidation_entries(
    spec: JsonObject, raw_cells: Sequence[CellRecord], samples: dict[TrialKey, list[ResourceSample]]
) -> list[ConsolidationEntry]:
    apart_roles = member(spec, "consolidation").get("apart")
    if not isinstance(apart_roles, Mapping):
        return []
    roles = [str(r) for r in apart_roles]
    out: list[ConsolidationEntry] = []
    for together in (c for c in raw_cells if c.factors.get("placement") == "together"):
        others = _others(together)
        apart = next(
            (c for c in raw_cells if c.factors.get("placement") == "apart" and _others(c) == others),
            None,
        )
        if apart is None or together.status != "complete" or apart.status != "complete":
            continue
        comparisons = []
        apart_trials, together_trials = _measured(apart), _measured(together)
        loads = [x for t in apart_trials if (x := _load(t)) is not None]
        reference = sum(loads) / len(loads) if loads and len(loads) == len(apart_trials) else None
        for name, metric, unit in RESOURCES:
            parts = _per_trial(apart, apart_trials, samples, roles, metric)
            scale_to = reference if metric == "cpu_percent" else None
            whole = _per_trial(together, together_trials, samples, roles, metric, scale_to)
            if parts and whole:
                comparisons.append(compare(name, unit, parts, whole).as_dict())
        out.append(
            {
                "factors": cast(Factors, others),  # the study file's values: JSON
                "apart_cell": apart.index,
                "together_cell": together.index,
                "roles": roles,
                "comparisons": comparisons,  # type: ignore[typeddict-item]
                "paper": paper_consolidation(spec, together.factors),
            }
        )
    return out


def _others(cell: CellRecord) -> dict[str, object]:
    """A cell's factors but its placement: what its counterpart must share."""
    return {k: v for k, v in cell.factors.items() if k != "placement"}


def paper_consolidation(spec: JsonObject, factors: JsonObject) -> PaperConsolidation | None:
    """The paper's figures for the combined server's configuration: ``paper.consolidation`` keyed by
    a value of the cell's factors (``paper.factor`` first) or by the combined server's profile."""
    paper = member(spec, "paper")
    figures = optional_member(paper, "consolidation")
    if figures is None:
        return None
    named = [factors.get(str(paper["factor"]))] if paper.get("factor") else []
    candidates = [*named, *factors.values(), member(spec, "consolidation").get("together")]
    key = next((str(c) for c in candidates if c is not None and str(c) in figures), None)
    row = optional_member(figures, key) if key is not None else None
    if key is None or row is None:
        return None

    def figure(name: str) -> float | None:
        value = row.get(name)
        return float(value) if is_number(value) else None

    return {
        "source": str(paper.get("source") or "the seed paper"),
        "configuration": key,
        "cpu_predicted": figure("cpu_predicted_percent"),
        "cpu_actual": figure("cpu_actual_percent"),
        "memory_predicted": figure("memory_predicted_mb"),
        "memory_actual": figure("memory_actual_mb"),
    }


def _measured(cell: CellRecord) -> list[TrialRecord]:
    """The trials to compare: a searched cell's confirmation trials, else all of them."""
    confirmed = [t for t in cell.trials if t.kind == "search:confirm"]
    return confirmed or list(cell.trials)


def _load(trial: TrialRecord) -> float | None:
    """The trial's load: its users (closed model) or its offered rate."""
    load = trial.users or trial.offered_rate
    return float(load) if load else None


def _per_trial(
    cell: CellRecord,
    trials: list[TrialRecord],
    samples: dict[TrialKey, list[ResourceSample]],
    roles: list[str],
    metric: str,
    scale_to: float | None = None,
) -> list[float]:
    """Each trial's sum over the roles of the metric's mean in its measured window; with
    ``scale_to``, in proportion to that load instead of the trial's own."""
    out = []
    for t in trials:
        rows = samples.get(trial_key(cell, t), [])
        means = summarize(rows, t.warmup_s, t.warmup_s + t.duration_s) if rows else {}
        figures = [means.get(role_scope(r), {}).get(metric) for r in roles]
        if rows and all(f is not None for f in figures):
            total = sum(f for f in figures if f is not None)
            load = _load(t)
            out.append(total * scale_to / load if scale_to is not None and load else total)
    return out
