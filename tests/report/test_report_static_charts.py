"""The SVG charts of report.md: a panel with many series (a 16-cell study draws 32 latency lines in
one) still gets room for its plot beside its legend."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from caplab.report.layout.charts import Chart, Panel, Series
from caplab.report.render.static_charts import render_svg


def test_a_panel_with_a_long_legend_keeps_its_plot(tmp_path: Path) -> None:
    series = [
        Series(
            f"scenario=orchestration stores=4 hosts={i} p99",
            [100, 200, 400],
            [1 + i, 2 + i, 9 + i],
            "line",
            i,
        )
        for i in range(32)
    ]
    chart = Chart(
        "latency", "Latency percentiles against offered load", "offered load", [Panel("ms", series)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns when the axes collapse to nothing
        svg = render_svg(chart, tmp_path / "latency.svg").read_text()
    assert svg.count("hosts=") == 32, "every series is in the legend"
    height = float(re.search(r'height="([\d.]+)pt"', svg).group(1))  # type: ignore[union-attr]
    assert height > 32 * 0.16 * 72, "the figure grew to hold the legend"
