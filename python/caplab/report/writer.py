"""Writing a study's report: index.html, report.md, results.json and what they need beside them
(plotly.min.js, charts/*.svg). The one entry point `caplab report`, `caplab run` and `caplab demo`
call."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path

from caplab.report.document import dumps, load_results
from caplab.report.layout.blocks import Report
from caplab.report.layout.charts import Chart
from caplab.report.layout.sections import build_report
from caplab.report.model.types import Results
from caplab.report.render.html import PLOTLY_JS, render_html
from caplab.report.render.markdown import CHART_DIR, ChartWriter, render_markdown
from caplab.store.repository import Store

HTML = "index.html"
MARKDOWN = "report.md"
RESULTS = "results.json"


@dataclass(frozen=True)
class ReportFiles:
    directory: Path
    html: Path
    markdown: Path
    results: Path
    assets: list[Path] = field(default_factory=list)
    """plotly.min.js and the SVG charts."""

    @property
    def files(self) -> list[Path]:
        return [self.html, self.markdown, self.results, *self.assets]


def default_report_dir(study_id: int) -> Path:
    """``./reports/study-<id>/``."""
    return Path("reports") / f"study-{study_id}"


def _copy_plotly(directory: Path) -> Path:
    """plotly.js from the plotly package, beside the page: the report opens with no network."""
    target = directory / PLOTLY_JS
    with as_file(files("plotly") / "package_data" / "plotly.min.js") as source:
        if not target.exists() or target.stat().st_size != source.stat().st_size:
            shutil.copyfile(source, target)
    return target


def _chart_writer(directory: Path, charts: str) -> tuple[ChartWriter, list[Path], dict[str, str]]:
    """Draws each chart as an SVG in ``directory/charts`` (emptied first: charts of an earlier
    report of another shape would linger); returns the drawer, the files drawn and each chart's
    path relative to ``directory``."""
    charts_dir = directory / charts
    if charts_dir.exists():
        shutil.rmtree(charts_dir)
    svgs: list[Path] = []
    static: dict[str, str] = {}

    # matplotlib is imported when a chart is drawn, not with the package: the commands that import
    # the report (run, studies, compare) start a second sooner.
    from caplab.report.render import static_charts

    def draw(chart: Chart) -> Path:
        svgs.append(static_charts.render_svg(chart, charts_dir / f"{chart.id}.svg"))
        static[chart.id] = f"{charts}/{chart.id}.svg"
        return Path(static[chart.id])

    return draw, svgs, static


def write_report(store: Store, study_id: int, out_dir: Path | None = None) -> ReportFiles:
    """Writes the report of ``study_id`` into ``out_dir`` (default ``./reports/study-<id>/``),
    replacing an earlier report there, and returns the files written."""
    directory = Path(out_dir) if out_dir is not None else default_report_dir(study_id)
    directory.mkdir(parents=True, exist_ok=True)
    results = load_results(store, study_id)
    report = build_report(results)
    draw, svgs, static = _chart_writer(directory, CHART_DIR)
    generated = results["generated_at"]
    markdown = directory / MARKDOWN
    markdown.write_text(render_markdown(report, draw, generated), encoding="utf-8")
    html = directory / HTML
    html.write_text(render_html(report, generated, static), encoding="utf-8")
    data = directory / RESULTS
    data.write_text(dumps(results), encoding="utf-8")
    return ReportFiles(directory, html, markdown, data, [_copy_plotly(directory), *svgs])


def write_page(report: Report, results: Results, directory: Path) -> list[Path]:
    """Writes ``report`` as ``directory/index.md``, its charts in ``charts/`` and the results it
    was made from as ``results.json`` beside it (the page's footer says every figure is there), as
    a docs page; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    draw, svgs, _ = _chart_writer(directory, CHART_DIR)
    page = directory / "index.md"
    page.write_text(render_markdown(report, draw, results["generated_at"]), encoding="utf-8")
    data = directory / RESULTS
    data.write_text(dumps(results), encoding="utf-8")
    return [page, data, *svgs]
