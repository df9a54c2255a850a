"""A job study's chart: per phase a panel of items/s against the job's size, one line per layout in
size order with its repeats' interval, drawn to SVG without complaint."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, cast

from caplab.report.layout.job_charts import job_chart
from caplab.report.model.types import Results
from caplab.report.render.static_charts import render_svg


def _row(cell: int, objects: int, layout: str, phase: str, rate: float) -> dict[str, Any]:
    return {
        "cell": cell,
        "label": f"objects={objects} layout={layout}",
        "factors": {"objects": objects, "layout": layout},
        "phase": phase,
        "items_per_s": rate,
        "ci95": [rate * 0.9, rate * 1.1] if phase == "sync" else None,
        "wall_s": objects / rate,
        "limit": None,
        "paper": None,
        "cost_per_item_s": None,
    }


def test_each_phase_is_a_panel_with_a_line_per_layout_in_size_order(tmp_path: Path) -> None:
    rows = [
        _row(i, n, layout, phase, rate)
        for i, (n, layout, stage, sync) in enumerate(
            [(50000, "internal", 109, 26), (10000, "internal", 91, 37), (10000, "external", 278, 56)]
        )
        for phase, rate in (("stage", stage), ("sync", sync))
    ]
    chart = job_chart(cast(Results, {"jobs": {"size_factor": "objects", "rows": rows}}))
    assert chart is not None and chart.x_title == "objects"
    assert [p.title for p in chart.panels] == ["stage", "sync"]
    stage = {s.name: s for s in chart.panels[0].series}
    assert set(stage) == {"layout=internal", "layout=external"}
    assert list(stage["layout=internal"].x) == [10000, 50000] and list(stage["layout=internal"].y) == [
        91,
        109,
    ]
    assert stage["layout=internal"].low is None, "one run each: no interval"
    sync = {s.name: s for s in chart.panels[1].series}
    assert list(sync["layout=internal"].low or []) == [37 * 0.9, 26 * 0.9]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svg = render_svg(chart, tmp_path / "job.svg").read_text()
    assert "layout=external" in svg and "sync (items/s)" in svg


def test_a_job_without_a_size_factor_has_no_chart() -> None:
    assert job_chart(cast(Results, {"jobs": {"size_factor": None, "rows": []}})) is None
    assert job_chart(cast(Results, {"jobs": None})) is None
