"""The results document: every number the report shows, built from the study as stored.

``build_results`` is a pure function of the study document (``Store.study_document``) and its
resource samples, so it can be tested on any study; ``load_results`` reads both from a store.
The document is strict JSON (no NaN or Infinity, passwords masked): results.json is this document,
and the HTML and Markdown are written from it alone.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np

from caplab.analysis.scaling import study_scaling
from caplab.analysis.usl import usl
from caplab.report.model.cells import cell_result, samples_by_trial
from caplab.report.model.scenario import DEFAULT_HEADROOM, goal_of, naming_factors, parse_spec, scenario
from caplab.report.model.series import cell_series
from caplab.report.text.observations import observe
from caplab.report.text.recommend import recommend
from caplab.store.repository import Store
from caplab.store.urls import scrub_json
from caplab.units import cell_label, is_number

SCHEMA = "caplab-report/1"
CURVE_POINTS = 60


def load_results(store: Store, study_id: int) -> dict[str, Any]:
    """Reads the study and its samples from the store and builds the results document."""
    return build_results(store.study_document(study_id), store.resource_samples(study_id))


def _elapsed(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None


def _matrix(cells: list[dict[str, Any]], naming: list[str]) -> dict[str, Any]:
    factors: dict[str, list[Any]] = {}
    for c in cells:
        for k, v in c["factors"].items():
            if v not in factors.setdefault(k, []):
                factors[k].append(v)
    statuses: dict[str, int] = {}
    for c in cells:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    return {"factors": factors, "naming": naming, "cells": len(cells), "by_status": statuses}


def _capacity(cells: list[dict[str, Any]], goal: dict[str, float] | None) -> list[dict[str, Any]]:
    """Per cell, the figure a configuration is rated by: its capacity when searched, else its measured
    throughput (a lower bound: the load offered, not the most it can take)."""
    headroom = goal["headroom"] if goal else DEFAULT_HEADROOM
    out = []
    for c in cells:
        m = c["metrics"]
        cap = m["capacity"]
        if cap is not None:
            value, unit, basis = cap["value"], cap["unit"], "capacity"
        elif c["status"] == "complete" and is_number(m["throughput"]):
            value, unit, basis = m["throughput"], "req/s", "throughput"
        else:
            continue
        # A configuration is rated by a rate: a closed model's capacity in users by the throughput
        # measured at it.
        rate = value if unit == "req/s" else m["throughput"]
        out.append(
            {
                "cell": c["index"],
                "label": c["label"],
                "factors": c["factors"],
                "basis": basis,
                "value": value,
                "unit": unit,
                "ci95": cap["ci95"] if cap else [None, None],
                "found": cap["found"] if cap else value is not None,
                "message": cap["message"] if cap else None,
                "trials": cap["trial_count"] if cap else m["trials"],
                "search_s": cap["search_s"] if cap else None,
                "consistency": m["consistency"],
                "limit": (c["limit"] or {}).get("resource"),
                "headroom": headroom,
                "rate": rate,
                "rated": rate * (1.0 - headroom) if is_number(rate) else None,
            }
        )
    return out


def _curve(fit: dict[str, Any], points: list[dict[str, Any]]) -> list[dict[str, float]]:
    """The fitted law sampled from N = 1 (or the smallest N) to the extrapolation, for the chart."""
    preds = [p["n"] for p in fit.get("predictions") or []]
    top = max([*preds, *(p["n"] for p in points)])
    low = min(1.0, *(p["n"] for p in points))
    grid = np.linspace(low, top, CURVE_POINTS)
    ys = usl(grid, fit["lambda"], fit["sigma"], fit["kappa"])
    return [{"n": round(float(n), 4), "throughput": float(y)} for n, y in zip(grid, ys, strict=True)]


def _scaling(document: dict[str, Any], labels: dict[int, str]) -> list[dict[str, Any]]:
    fits = study_scaling(document)
    for entry in fits:
        entry["labels"] = [labels.get(i, str(i)) for i in entry["cells"]]
        entry["group_label"] = cell_label(entry["group"]) if entry["group"] else ""
        fit = entry.get("fit")
        entry["curve"] = _curve(fit, entry["points"]) if fit else []
    return fits


def build_results(
    document: dict[str, Any], sample_rows: list[dict[str, Any]], generated_at: str | None = None
) -> dict[str, Any]:
    """The results document (see the module docstring and the report's README section)."""
    study = document["study"]
    spec = parse_spec(study.get("spec"))
    samples = samples_by_trial(sample_rows)
    raw_cells = document.get("cells", [])
    naming = naming_factors(spec, raw_cells)
    cells = [cell_result(c, samples, naming) for c in raw_cells]
    goal = goal_of(spec)
    environment = dict(study.get("environment") or {})
    series = [
        s
        for raw, c in zip(document.get("cells", []), cells, strict=True)
        for s in cell_series(raw, samples, c["roles"])
    ]
    results: dict[str, Any] = {
        "schema": SCHEMA,
        "generated_at": generated_at or datetime.now(UTC).isoformat(timespec="seconds"),
        "study": {
            "id": study["id"],
            "name": study["name"],
            "status": study["status"],
            "created_at": study.get("created_at"),
            "finished_at": study.get("finished_at"),
            "elapsed_s": _elapsed(study.get("created_at"), study.get("finished_at")),
            "spec_path": study.get("spec_path"),
            "store": study.get("store"),
            "caplab_version": study.get("caplab_version"),
        },
        "environment": environment,
        "scenario": scenario(spec),
        "goal": goal,
        "matrix": _matrix(cells, naming),
        "cells": cells,
        "capacity": _capacity(cells, goal),
        "scaling": _scaling(document, {c["index"]: c["label"] for c in cells}),
        "events": [
            {
                "at": e.get("at"),
                "kind": e.get("kind"),
                "message": e.get("message"),
                "cell": e.get("cell_index"),
            }
            for e in document.get("events", [])
        ],
        "series": series,
    }
    results = scrub_json(results)
    results["observations"] = observe(results)
    results["recommendation"] = recommend(results)
    strict: dict[str, Any] = scrub_json(results)
    return strict


def dumps(results: dict[str, Any]) -> str:
    """results.json's text: strict JSON (a NaN left anywhere is a bug, and raises here)."""
    return json.dumps(results, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
