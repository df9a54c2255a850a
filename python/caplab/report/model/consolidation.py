"""The consolidation table (the Exchange paper's test 2) from a study with ``consolidation:``: each
cell together set beside its cell apart (the same factors otherwise), per resource, from each
trial's means over its measured window.

A searched cell's trials ran at many loads: only its confirmation trials (at its capacity) count,
and as the two placements' capacities differ, the combined server's CPU is scaled to the load the
single-role servers carried (CPU per user, or per request/s, times their load) — the paper compared
the two under the same load. Memory is compared as measured: it does not grow in proportion."""

from __future__ import annotations

from typing import Any

from caplab.analysis.consolidation import compare
from caplab.analysis.scope import role_scope
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.report.model.cells import TrialKey, trial_key
from caplab.report.model.types import ConsolidationEntry, PaperConsolidation
from caplab.units import is_number

RESOURCES = (("CPU", "cpu_percent", "% of a core"), ("memory", "rss_mb", "MB"))
"""What is compared, as the roles' sum: CPU (100 = one host core, whatever the profile) and the
resident memory of their processes."""


def consolidation_entries(
    spec: dict[str, Any], raw_cells: list[dict[str, Any]], samples: dict[TrialKey, list[ResourceSample]]
) -> list[ConsolidationEntry]:
    section = spec.get("consolidation")
    if not isinstance(section, dict) or not isinstance(section.get("apart"), dict):
        return []
    roles = [str(r) for r in section["apart"]]
    out: list[ConsolidationEntry] = []
    for together in (c for c in raw_cells if (c.get("factors") or {}).get("placement") == "together"):
        others = {k: v for k, v in together["factors"].items() if k != "placement"}
        apart = next(
            (
                c
                for c in raw_cells
                if (c.get("factors") or {}).get("placement") == "apart"
                and {k: v for k, v in c["factors"].items() if k != "placement"} == others
            ),
            None,
        )
        if apart is None or together.get("status") != "complete" or apart.get("status") != "complete":
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
                "factors": others,
                "apart_cell": int(apart["index"]),
                "together_cell": int(together["index"]),
                "roles": roles,
                "comparisons": comparisons,  # type: ignore[typeddict-item]
                "paper": paper_consolidation(spec, together),
            }
        )
    return out


def paper_consolidation(spec: dict[str, Any], together: dict[str, Any]) -> PaperConsolidation | None:
    """The paper's figures for the combined server's configuration: ``paper.consolidation`` keyed by
    a value of the cell's factors (``paper.factor`` first) or by the combined server's profile."""
    paper = spec.get("paper")
    figures = paper.get("consolidation") if isinstance(paper, dict) else None
    if not isinstance(paper, dict) or not isinstance(figures, dict):
        return None
    factors: dict[str, Any] = together.get("factors") or {}
    named = [factors.get(str(paper["factor"]))] if paper.get("factor") else []
    placement = spec.get("consolidation") or {}
    candidates = [*named, *factors.values(), placement.get("together")]
    key = next((str(c) for c in candidates if c is not None and str(c) in figures), None)
    if key is None or not isinstance(figures[key], dict):
        return None
    row: dict[str, Any] = figures[key]

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


def _measured(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The trials to compare: a searched cell's confirmation trials, else all of them."""
    trials: list[dict[str, Any]] = cell.get("trials") or []
    confirmed = [t for t in trials if (t.get("trial") or {}).get("kind") == "search:confirm"]
    return confirmed or trials


def _load(trial: dict[str, Any]) -> float | None:
    """The trial's load: its users (closed model) or its offered rate."""
    load = trial.get("users") or trial.get("offered_rate")
    return float(load) if load else None


def _per_trial(
    cell: dict[str, Any],
    trials: list[dict[str, Any]],
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
        warmup = float(t.get("warmup_s") or 0.0)
        means = summarize(rows, warmup, warmup + float(t.get("duration_s") or 0.0)) if rows else {}
        figures = [means.get(role_scope(r), {}).get(metric) for r in roles]
        if rows and all(f is not None for f in figures):
            total = sum(f for f in figures if f is not None)
            load = _load(t)
            out.append(total * scale_to / load if scale_to is not None and load else total)
    return out
