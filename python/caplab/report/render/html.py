"""index.html: the report as one page that opens from disk with no network. Styles and the page's
script are inlined; plotly.js is the file beside it (``PLOTLY_JS``); the charts' figures travel in
the page as JSON, drawn when it loads."""

from __future__ import annotations

import json
from html import escape
from importlib.resources import files
from typing import Any

from caplab.report.layout.blocks import (
    Block,
    Bullets,
    ChartBlock,
    Explorer,
    KeyFigures,
    Para,
    Report,
    Section,
    Table,
)
from caplab.report.layout.charts import Chart
from caplab.report.render.plotly_charts import figure

PLOTLY_JS = "plotly.min.js"


def _asset(name: str) -> str:
    return (files("caplab.report.render") / "assets" / name).read_text(encoding="utf-8")


def _para(p: Para, tag: str = "p") -> str:
    lead = f'<span class="lead">{escape(p.lead)}</span>' if p.lead else ""
    cls = {"callout": ' class="callout"', "warning": ' class="warning"'}.get(p.tone, "")
    return f"<{tag}{cls}>{lead}{escape(p.text)}</{tag}>"


def _bullets(b: Bullets) -> str:
    return '<ul class="observations">' + "".join(_para(p, "li") for p in b.items) + "</ul>"


LONG_FIGURE = 14
"""Characters past which a card's value is set smaller: a configuration's name
(``scenario=messaging stores=1``) wraps at its spaces, not inside a word."""


def _value_class(value: str) -> str:
    return "value long" if len(value) > LONG_FIGURE else "value"


def _figures(k: KeyFigures) -> str:
    cards = "".join(
        f'<div class="figure-card"><div class="label">{escape(i.label)}</div>'
        f'<div class="{_value_class(i.value)}">{escape(i.value)}</div>'
        f'<div class="note">{escape(i.note)}</div></div>'
        for i in k.items
    )
    return f'<div class="figures">{cards}</div>'


def _table(t: Table) -> str:
    classes = "kv" if t.key_value else "data" + (" sortable" if t.sortable else "")
    caption = f"<caption>{escape(t.caption)}</caption>" if t.caption else ""
    head = ""
    if not t.key_value:
        cells = []
        for c in t.columns:
            unit = f'<span class="unit">{escape(c.unit)}</span>' if c.unit else ""
            cls = ' class="num"' if c.numeric else ""
            cells.append(f'<th scope="col"{cls}>{escape(c.title)}{unit}</th>')
        head = "<thead><tr>" + "".join(cells) + "</tr></thead>"
    rows = []
    for row in t.rows:
        tds = []
        for col, cell in zip(t.columns, row, strict=True):
            classes_ = " ".join(
                x for x in ("num" if col.numeric else "", "wrap" if col.wrap else "", cell.tone) if x
            )
            cls = f' class="{classes_}"' if classes_ else ""
            sort = f' data-sort="{cell.sort!r}"' if isinstance(cell.sort, int | float) else ""
            tds.append(f"<td{cls}{sort}>{escape(cell.text)}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    note = f'<p class="table-note">{escape(t.note)}</p>' if t.note else ""
    table = f'<table class="{classes}">{caption}{head}<tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="table-wrap">{table}</div>{note}'


class _Page:
    """Collects the figures while the blocks are written. ``static`` maps a chart's id to its SVG
    file (relative to the page): printed, the page shows those instead of the interactive charts,
    which plotly sizes for the screen."""

    def __init__(self, static: dict[str, str]) -> None:
        self.figures: dict[str, Any] = {}
        self.static = static
        self.explorers = 0

    def printed(self, chart: Chart) -> str:
        src = self.static.get(chart.id)
        if src is None:
            return ""
        return f'<img class="print-only" src="{escape(src)}" alt="{escape(chart.title)}">'

    def chart(self, block: ChartBlock) -> str:
        chart = block.chart
        self.figures[chart.id] = figure(chart)
        caption = f"<figcaption>{escape(chart.caption)}</figcaption>" if chart.caption else ""
        plot = f'<div class="plot" data-chart="{escape(chart.id)}"></div>'
        return f'<figure class="chart">{plot}{self.printed(chart)}{caption}</figure>'

    def explorer(self, block: Explorer) -> str:
        self.explorers += 1
        target = f"explorer-{self.explorers}"
        first = next((e for e in block.entries if e.representative), block.entries[0])
        groups: dict[str, list[str]] = {}
        for e in block.entries:
            self.figures[e.chart.id] = figure(e.chart)
            selected = " selected" if e is first else ""
            mark = " ★" if e.representative else ""
            name = f"{escape(e.group)} · {escape(e.label)}{mark}"
            option = f'<option value="{escape(e.chart.id)}"{selected}>{name}</option>'
            groups.setdefault(e.group, []).append(option)
        options = "".join(f'<optgroup label="{escape(g)}">{"".join(o)}</optgroup>' for g, o in groups.items())
        bar = (
            f'<div class="explorer-bar"><label for="{target}-select">Trial</label>'
            f'<select id="{target}-select" data-explorer="{target}">{options}</select>'
            "<span>★ the trial that stands for the cell</span></div>"
        )
        plot = f'<div class="plot" id="{target}" data-chart="{escape(first.chart.id)}"></div>'
        printed = "".join(self.printed(e.chart) for e in block.entries if e.representative)
        return f'{bar}<figure class="chart">{plot}{printed}</figure>'

    def block(self, block: Block | Section) -> str:
        if isinstance(block, Section):
            return self.section(block, "")
        if isinstance(block, Para):
            return _para(block)
        if isinstance(block, Bullets):
            return _bullets(block)
        if isinstance(block, KeyFigures):
            return _figures(block)
        if isinstance(block, Table):
            return _table(block)
        if isinstance(block, ChartBlock):
            return self.chart(block)
        return self.explorer(block)

    def section(self, s: Section, number: str) -> str:
        tag = f"h{s.level}"
        num = f'<span class="num">{number}</span>' if number else ""
        body = "".join(self.block(b) for b in s.blocks)
        return f'<section id="{escape(s.anchor)}"><{tag}>{num}{escape(s.title)}</{tag}>{body}</section>'


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no '</' can close it early."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render_html(report: Report, generated_at: str, static: dict[str, str] | None = None) -> str:
    page = _Page(static or {})
    sections = "".join(page.section(s, f"{i + 1}") for i, s in enumerate(report.sections))
    toc = "".join(f'<li><a href="#{escape(s.anchor)}">{escape(s.title)}</a></li>' for s in report.sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="caplab">
<title>{escape(report.title)}</title>
<style>
{_asset("report.css")}
</style>
<script src="{PLOTLY_JS}"></script>
</head>
<body>
<div class="page">
<header class="report-header">
<div class="kicker">caplab sizing report</div>
<h1>{escape(report.title)}</h1>
<p class="subtitle">{escape(report.subtitle)}</p>
</header>
<nav class="toc" aria-label="Contents"><ol>{toc}</ol></nav>
<main>
{sections}
</main>
<footer>Generated {escape(generated_at)} by caplab. Every figure on this page is in results.json beside it;
report.md has the same report with the charts as SVG files.</footer>
</div>
<script type="application/json" id="caplab-charts">{_script_json(page.figures)}</script>
<script>
{_asset("report.js")}
</script>
</body>
</html>
"""
