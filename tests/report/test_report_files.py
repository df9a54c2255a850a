"""index.html and report.md: the numbers match results.json, charts exist and are valid, and the
page needs nothing from the network."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from caplab import units as u
from support.reports import Built, Written

CHART_JSON = re.compile(r'<script type="application/json" id="caplab-charts">(.*?)</script>', re.S)


class _Refs(HTMLParser):
    """Every src/href on the page, and the chart ids its plots ask for."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.charts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("src", "href"):
            if values.get(key):
                self.refs.append(str(values[key]))
        if values.get("data-chart"):
            self.charts.append(str(values["data-chart"]))


def _refs(written: Written) -> _Refs:
    parser = _Refs()
    parser.feed(written.html)
    return parser


def test_capacities_and_labels_appear_in_both_html_and_markdown(built: Built) -> None:
    results = built.scaleout.results
    for entry in results["capacity"]:
        shown = u.load(entry["value"], entry["unit"])
        assert shown in built.scaleout.html
        assert shown in built.scaleout.markdown
    for cell in results["cells"]:
        assert cell["label"] in built.scaleout.html and cell["label"] in built.scaleout.markdown
    rec = results["recommendation"]["text"]
    assert rec in built.scaleout.markdown
    assert escape(rec) in built.scaleout.html


def test_the_results_table_shows_each_cells_throughput_and_p99(built: Built) -> None:
    for cell in built.scaleout.results["cells"]:
        m = cell["metrics"]
        for figure in (m["throughput"], m["latency_ms"]["p99"]):
            assert f">{u.num(figure)}<" in built.scaleout.html
            assert f"| {u.num(figure)} |" in built.scaleout.markdown


def test_markdown_charts_exist_and_are_svg(built: Built) -> None:
    for written in (built.scaleout, built.fixed):
        images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", written.markdown)
        assert len(images) >= 4
        for image in images:
            path = written.directory / image
            assert path.is_file(), image
            root = ET.parse(path).getroot()
            assert root.tag.endswith("svg")
        on_disk = {
            p.relative_to(written.directory).as_posix() for p in (written.directory / "charts").glob("*.svg")
        }
        assert on_disk == set(images), "every chart file is referenced, and nothing else lingers"


def test_the_page_loads_nothing_from_the_network(built: Built) -> None:
    refs = _refs(built.scaleout)
    assert "plotly.min.js" in refs.refs
    for ref in refs.refs:
        assert not re.match(r"^(https?:)?//", ref), ref
        if not ref.startswith("#"):
            assert (built.scaleout.directory / ref).is_file(), ref


def _figures(written: Written) -> dict[str, Any]:
    match = CHART_JSON.search(written.html)
    assert match is not None
    figures: dict[str, Any] = json.loads(match.group(1))
    return figures


def test_every_plot_has_a_valid_plotly_figure(built: Built) -> None:
    for written in (built.scaleout, built.fixed):
        figures = _figures(written)
        for chart in _refs(written).charts:
            assert chart in figures
        for name, figure in figures.items():
            go.Figure(figure)  # raises on any property plotly does not know
            assert figure["data"], name
            assert figure["layout"]["title"]["text"]


def test_the_scaling_chart_draws_the_fit_and_its_interval_or_only_the_points(built: Built) -> None:
    figure = _figures(built.scaleout)["scaling-0"]
    names = [t.get("name") for t in figure["data"]]
    if built.scaleout.results["scaling"][0]["fit"] is not None:
        assert "measured capacity" in names and "95% interval" in names
        assert any(str(n).endswith(" fit") for n in names)
    else:  # no law is a model of the points (see test_report_variants for both cases forced)
        assert names == ["measured capacity", "measured peak"]
    assert figure["layout"]["xaxis"]["title"]["text"] == "workers"


def test_a_timeline_per_trial_is_selectable(built: Built) -> None:
    figures = _figures(built.scaleout)
    trials = sum(len(c["trials"]) for c in built.scaleout.results["cells"])
    timelines = [k for k in figures if k.startswith("timeline-")]
    assert len(timelines) == trials
    panels = [v["title"]["text"] for k, v in figures[timelines[0]]["layout"].items() if k.startswith("yaxis")]
    assert panels[:3] == ["req/s", "latency (ms)", "CPU (% of one core)"]


def test_the_report_sections_follow_the_papers(built: Built) -> None:
    headings = re.findall(r"^## \d+\. (.+)$", built.scaleout.markdown, re.M)
    assert headings == [
        "Summary",
        "Environment",
        "Scenario and workload",
        "Test matrix",
        "Results",
        "Capacity",
        "Scaling",
        "Trials over time",
        "Observations",
        "Recommendations",
        "Appendix: the searches and events",
        "Methodology",
    ]
    assert "Not measured" in built.scaleout.markdown  # no storage baseline in this study


def test_a_report_can_be_written_again_over_the_last(built: Built, tmp_path: Path) -> None:
    from caplab.report import write_report
    from caplab.store import Store

    with Store(built.db_url) as store:
        first = write_report(store, 2, tmp_path)
        second = write_report(store, 2, tmp_path)
    assert [p.name for p in first.files] == [p.name for p in second.files]
    assert all(p.is_file() for p in second.files)
