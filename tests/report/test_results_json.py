"""results.json: strict JSON holding every number the report shows, shaped for scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.reports import PASSWORD, WORKERS, Built


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_results_json_is_strict_json_with_the_documented_top_level(built: Built) -> None:
    for written in (built.scaleout, built.fixed):
        doc = _strict((written.directory / "results.json").read_text(encoding="utf-8"))
        assert {"study", "environment", "scenario", "goal", "matrix", "cells", "capacity", "scaling"} <= set(
            doc
        )
        assert {"observations", "recommendation", "series"} <= set(doc)
        assert doc["schema"] == "caplab-report/1"


def test_every_cell_has_factors_metrics_resources_and_limit(built: Built) -> None:
    cells = built.scaleout.results["cells"]
    assert [c["factors"] for c in cells] == [{"workers": w} for w in WORKERS]
    for c in cells:
        assert {"factors", "metrics", "resources", "limit"} <= set(c)
        assert c["status"] == "complete" and c["searched"]
        assert c["metrics"]["throughput"] > 0
        assert c["metrics"]["latency_ms"]["p50"] <= c["metrics"]["latency_ms"]["p99"]
        assert c["resources"]["server"]["cpu_percent"] > 0
        # The demands at capacity name the server's CPU (whether or not it saturated on a busy machine).
        # A limit was analysed; on a machine another test shares it can be the generator's own (the
        # closed loop at the same concurrency carried more), which caplab then says, never "not reached".
        assert c["limit"]["kind"] in ("hardware", "software", "generator")
        demands = {d["resource"]: d for d in c["limit"]["evidence"]["demands"]}
        assert demands["cpu:server"]["utilization"] > 0
        assert demands["cpu:server"]["demand_ms"] > 0


def test_a_failed_cell_is_reported_with_its_error_and_no_figures(built: Built) -> None:
    cells = {c["factors"]["case"]: c for c in built.fixed.results["cells"]}
    broken = cells["broken"]
    assert broken["status"] == "failed"
    assert "exited with code 3" in broken["error"]
    assert broken["limit"] is None and broken["metrics"]["throughput"] is None
    assert [c["status"] for c in (cells["light"], cells["heavy"])] == ["complete", "complete"]
    # Fixed-load cells were never pushed: their limit is computed from the samples, as not reached.
    assert cells["heavy"]["limit"]["kind"] in ("not reached", "hardware")
    assert cells["heavy"]["limit"]["evidence"]["demands"][0]["utilization"] > 0


def test_capacity_lists_each_searched_cell_with_its_interval(built: Built) -> None:
    results = built.scaleout.results
    capacity = results["capacity"]
    assert [e["cell"] for e in capacity] == [0, 1, 2]
    for entry, cell in zip(capacity, results["cells"], strict=True):
        assert entry["basis"] == "capacity" and entry["found"]
        assert entry["value"] == cell["metrics"]["capacity"]["value"] > 0
        low, high = entry["ci95"]
        assert low <= entry["value"] <= high
        assert entry["rated"] == pytest.approx(entry["value"] * 0.75)


def test_scaling_names_its_factor_and_the_cells_it_used(built: Built) -> None:
    [fit] = built.scaleout.results["scaling"]
    assert fit["factor"] == "workers"
    assert fit["cells"] == [0, 1, 2]
    assert sorted(p["n"] for p in fit["points"]) == [float(w) for w in WORKERS]
    # Three workers on this machine's cores may scale or plateau: either a law that fits, with its
    # curve, or no model, nothing drawn and the measured peak.
    if fit["fit"] is not None:
        assert fit["fit"]["model"] in ("linear", "amdahl", "usl")
        assert fit["curve"] and all(p["throughput"] >= 0 for p in fit["curve"])
    else:
        assert fit["note"].startswith("no model fits — ") and "predictions" not in fit["candidate"]
        assert fit["curve"] == [] and fit["peak"]["throughput"] == max(p["throughput"] for p in fit["points"])


def test_the_fixed_study_rates_configurations_by_measured_throughput(built: Built) -> None:
    results = built.fixed.results
    assert results["scaling"] == []
    assert {e["basis"] for e in results["capacity"]} == {"throughput"}
    rec = results["recommendation"]
    assert rec["basis"] == "throughput"
    assert rec["text"].startswith("No cell was searched")
    assert "No goal was given" in rec["text"]


def test_observations_count_the_searches_rejected_trials(built: Built) -> None:
    results = built.scaleout.results
    probes = [t for c in results["cells"] for t in c["search"]["trials"]]
    rejected = sum(not t["passed"] for t in probes)
    # The summary of all searches (a cell not found, or unstable above its capacity, adds its own).
    [search] = [o for o in results["observations"] if o["topic"] == "search" and "searches ran" in o["text"]]
    assert f"ran {len(probes)} trials" in search["text"]
    assert f"{rejected} were rejected" in search["text"]
    # Each cell's limit is observed: the server's CPU, or (a neighbour worker taking the cores) the
    # generator, as the cells' limits above allow.
    limits = [o["text"] for o in results["observations"] if o["topic"] == "limit"]
    assert any("cpu:" in t or "generator" in t for t in limits), limits
    assert any(
        o["topic"] == "generator" and "µs of CPU per request" in o["text"] for o in results["observations"]
    )


def test_a_password_never_reaches_a_written_file(built: Built) -> None:
    for written in (built.scaleout, built.fixed):
        for path in Path(written.directory).rglob("*"):
            if path.is_file() and path.name != "plotly.min.js":
                assert PASSWORD not in path.read_text(encoding="utf-8", errors="replace"), path
    assert "app:***@db.example" in json.dumps(built.fixed.results)
