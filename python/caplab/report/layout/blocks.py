"""The report as a document of plain blocks (sections, paragraphs, tables, charts), built once from
the results and written twice: html.py and markdown.py only decide how a block looks."""

from __future__ import annotations

from dataclasses import dataclass, field

from caplab.report.layout.charts import Chart
from caplab.units import is_number


@dataclass(frozen=True)
class Para:
    text: str
    lead: str = ""
    """A bold run-in heading: "Recommendation." """
    tone: str = ""
    """"" | "warning" | "callout": how strongly the paragraph asks to be read."""


@dataclass(frozen=True)
class Bullets:
    items: list[Para]


@dataclass(frozen=True)
class Figure:
    """One key figure of the summary: a label, a value, a line of context."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class KeyFigures:
    items: list[Figure]


@dataclass(frozen=True)
class Column:
    title: str
    numeric: bool = False
    unit: str = ""
    wrap: bool = False
    """Prose (a reason, a note): wraps; figures and names stay on one line."""


@dataclass(frozen=True)
class TableCell:
    text: str
    sort: float | None = None
    """What the column sorts by (a number for figures); the text when None."""
    tone: str = ""
    """"" | "good" | "warn" | "bad"."""


@dataclass(frozen=True)
class Table:
    columns: list[Column]
    rows: list[list[TableCell]]
    caption: str = ""
    note: str = ""
    sortable: bool = True
    key_value: bool = False
    """A two-column label/value table (the environment): no header, not sorted."""


@dataclass(frozen=True)
class ChartBlock:
    chart: Chart


@dataclass(frozen=True)
class ExplorerEntry:
    group: str
    label: str
    chart: Chart
    representative: bool


@dataclass(frozen=True)
class Explorer:
    """Many charts of one kind (each trial over time) behind one selector; on paper and in
    Markdown, the representative ones."""

    entries: list[ExplorerEntry]


Block = Para | Bullets | KeyFigures | Table | ChartBlock | Explorer


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list[Block | Section] = field(default_factory=list)
    level: int = 2


@dataclass(frozen=True)
class Report:
    title: str
    subtitle: str
    sections: list[Section]


def num_cell(value: object, text: str) -> TableCell:
    """A figure's cell: sorts by the number, shows the formatted text."""
    return TableCell(text, value if is_number(value) else None)


def text_cell(text: str, tone: str = "") -> TableCell:
    return TableCell(text, None, tone)


def kv_table(rows: list[tuple[str, str]], caption: str = "") -> Table:
    return Table(
        [Column(""), Column("", wrap=True)],
        [[TableCell(k), TableCell(v)] for k, v in rows],
        caption=caption,
        sortable=False,
        key_value=True,
    )
