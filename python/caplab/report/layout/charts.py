"""A chart as plain data: what to draw, with titles and units, independent of how.

plotly_charts.py turns a ``Chart`` into an interactive Plotly figure for index.html, and
static_charts.py into an SVG for report.md, so both show the same series from the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from caplab.units import is_number

Style = Literal["line", "dashed", "dotted", "markers", "line+markers", "bar", "band"]

IDLE_DISK_PERCENT = 1.0
"""A disk never busier than this is idle: no chart panel for it."""
PALETTE = (
    "#1f5fa8",
    "#d9711c",
    "#2e8b57",
    "#c0392b",
    "#7d4fb0",
    "#8c6d31",
    "#d45f9e",
    "#5f6b73",
    "#9aa81e",
    "#17a2b8",
)


@dataclass(frozen=True)
class Series:
    name: str
    x: Sequence[float | str]
    """Loads, times or N (numbers), or configurations (a categorical chart)."""
    y: Sequence[float | None]
    style: Style = "line"
    color: int = 0
    """Index into PALETTE: one colour per cell (or per role) across the charts."""
    low: Sequence[float | None] | None = None
    """Band: the lower edge; markers: error bars (with ``high``)."""
    high: Sequence[float | None] | None = None
    hover: list[str] | None = None
    group: str | None = None
    """Series of one group toggle together in the interactive legend."""


@dataclass(frozen=True)
class Panel:
    y_title: str
    series: list[Series]
    log_y: bool = False
    lines: list[tuple[float, str]] = field(default_factory=list)
    """Horizontal reference lines: (y, label), e.g. all cores busy, the goal."""
    title: str = ""
    """The group of cells the panel shows, when a chart is split into one panel per group."""


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    x_title: str
    panels: list[Panel]
    categorical: bool = False
    log_x: bool = False
    shade: tuple[float, float] | None = None
    """An x range to shade, labelled ``shade_label`` (the warm-up, excluded from the figures)."""
    shade_label: str = ""
    caption: str = ""


def present(values: Sequence[object]) -> bool:
    return any(is_number(v) for v in values)


def worth(values: Sequence[object], floor: float = 0.0) -> bool:
    """Worth a panel of its own: a series that never rises above ``floor`` (an idle disk) says
    nothing a table cannot."""
    return any(is_number(v) and v > floor for v in values)
