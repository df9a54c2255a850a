"""report.md: the same report in Markdown, for a repository, a wiki or a diff between runs. Charts
are SVG files in ``charts/`` beside it; the trials over time show each cell's representative trial."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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

CHART_DIR = "charts"
ChartWriter = Callable[[Chart], Path]
"""Draws a chart to a file and returns its path relative to report.md."""


def _escape(text: str) -> str:
    """Text safe in a table cell or a line: pipes and line breaks would break the table."""
    return " ".join(text.split()).replace("|", "\\|")


def _para(p: Para) -> str:
    lead = f"**{p.lead}** " if p.lead else ""
    text = f"{lead}{p.text}"
    return f"> {text}" if p.tone == "callout" else (f"⚠ {text}" if p.tone == "warning" else text)


def _table(t: Table) -> str:
    lines = [f"**{t.caption}**", ""] if t.caption else []
    if t.key_value:
        lines += ["| | |", "|---|---|"]
    else:
        titles = [f"{c.title} ({c.unit})" if c.unit else c.title for c in t.columns]
        lines.append("| " + " | ".join(_escape(x) for x in titles) + " |")
        lines.append("|" + "|".join("---:" if c.numeric else "---" for c in t.columns) + "|")
    for row in t.rows:
        cells = [_escape(c.text) for c in row]
        if t.key_value:
            cells[0] = f"**{cells[0]}**"
        lines.append("| " + " | ".join(cells) + " |")
    if t.note:
        lines += ["", f"*{t.note}*"]
    return "\n".join(lines)


class _Writer:
    def __init__(self, draw: ChartWriter) -> None:
        self.draw = draw

    def chart(self, chart: Chart) -> str:
        path = self.draw(chart)
        caption = f"\n\n*{chart.caption}*" if chart.caption else ""
        return f"![{chart.title}]({path.as_posix()}){caption}"

    def block(self, block: Block | Section) -> str:
        if isinstance(block, Section):
            return self.section(block, "")
        if isinstance(block, Para):
            return _para(block)
        if isinstance(block, Bullets):
            return "\n".join(f"- {_para(p)}" for p in block.items)
        if isinstance(block, KeyFigures):
            return "\n".join(
                f"- **{i.label}:** {i.value}" + (f" ({i.note})" if i.note else "") for i in block.items
            )
        if isinstance(block, Table):
            return _table(block)
        if isinstance(block, ChartBlock):
            return self.chart(block.chart)
        return self.explorer(block)

    def explorer(self, block: Explorer) -> str:
        shown = [e for e in block.entries if e.representative] or block.entries[:1]
        parts = [self.chart(e.chart) for e in shown]
        left = len(block.entries) - len(shown)
        if left:
            parts.append(f"*{left} more trials are in index.html and results.json.*")
        return "\n\n".join(parts)

    def section(self, s: Section, number: str) -> str:
        title = f"{number} {s.title}" if number else s.title
        # An explicit anchor: the contents link by it wherever the Markdown is rendered.
        heading = f'<a id="{s.anchor}"></a>\n\n{"#" * s.level} {title}'
        parts = [heading] + [self.block(b) for b in s.blocks]
        return "\n\n".join(parts)


def render_markdown(report: Report, draw: ChartWriter, generated_at: str) -> str:
    writer = _Writer(draw)
    toc = "\n".join(f"{i + 1}. [{s.title}](#{s.anchor})" for i, s in enumerate(report.sections))
    body = "\n\n".join(writer.section(s, f"{i + 1}.") for i, s in enumerate(report.sections))
    footer = f"*Generated {generated_at} by caplab. Every figure here is in results.json beside this file.*"
    return f"# {report.title}\n\n*{report.subtitle}*\n\n{toc}\n\n{body}\n\n---\n\n{footer}\n"
