"""The consolidation table (the Exchange paper's test 2) from a study with ``consolidation:``: each
cell together set beside its cell apart (the same factors otherwise), per resource, from each
trial's means over its measured window."""

from __future__ import annotations

from typing import Any

from caplab.analysis.consolidation import compare
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.report.model.cells import TrialKey, trial_key
from caplab.report.model.types import ConsolidationEntry

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
        for name, metric, unit in RESOURCES:
            parts = _per_trial(apart, samples, roles, metric)
            whole = _per_trial(together, samples, roles, metric)
            if parts and whole:
                comparisons.append(compare(name, unit, parts, whole).as_dict())
        out.append(
            {
                "factors": others,
                "apart_cell": int(apart["index"]),
                "together_cell": int(together["index"]),
                "roles": roles,
                "comparisons": comparisons,  # type: ignore[typeddict-item]
            }
        )
    return out


def _per_trial(
    cell: dict[str, Any], samples: dict[TrialKey, list[ResourceSample]], roles: list[str], metric: str
) -> list[float]:
    """Each trial's sum over the roles of the metric's mean in its measured window."""
    out = []
    for t in cell.get("trials") or []:
        rows = samples.get(trial_key(cell, t), [])
        warmup = float(t.get("warmup_s") or 0.0)
        means = summarize(rows, warmup, warmup + float(t.get("duration_s") or 0.0)) if rows else {}
        figures = [means.get(f"role:{r}", {}).get(metric) for r in roles]
        if rows and all(f is not None for f in figures):
            out.append(sum(f for f in figures if f is not None))
    return out
