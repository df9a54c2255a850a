"""Charts as SVG files for report.md (and any reader without JavaScript), drawn with matplotlib
from the same ``Chart`` data as the interactive ones. Text stays text in the SVG, so the files
are small and searchable; output is deterministic for a given chart."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from caplab.report.layout.charts import PALETTE, Chart, Panel, Series
from caplab.units import is_number

WIDTH_IN = 9.0
PANEL_IN = 2.3
PANEL_IN_STACKED = 1.6
"""Panels of a chart with three or more share a page: a trial over time fits on one."""
TITLE_IN = 0.9
LEGEND_ROW_IN = 0.16
"""A legend row at 7 pt: a panel is at least as tall as its legend beside it, or matplotlib's
layout collapses the axes (a study of 16 cells draws 32 latency series in one panel)."""
TITLE_ROW_IN = 0.2
"""A panel's own title (the group of cells it shows) above it."""
matplotlib.rcParams.update(
    {
        "svg.fonttype": "none",
        "svg.hashsalt": "caplab",
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "axes.axisbelow": True,
        "grid.color": "#e3e6ea",
        "axes.edgecolor": "#9aa1a9",
    }
)


def _nums(values: Sequence[object]) -> list[float]:
    return [float(v) if is_number(v) else math.nan for v in values]


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _error(s: Series) -> list[list[float]] | None:
    if s.low is None or s.high is None:
        return None
    y, low, high = _nums(s.y), _nums(s.low), _nums(s.high)
    # An interval that does not contain its point (it can happen) draws no bar on that side.
    below = [max(a - b, 0.0) for a, b in zip(y, low, strict=True)]
    above = [max(b - a, 0.0) for a, b in zip(y, high, strict=True)]
    return [below, above]


def _draw_bars(ax: Axes, bars: list[Series], categories: list[str]) -> None:
    """Grouped bars: each series a slot within each category."""
    width = 0.8 / max(len(bars), 1)
    for k, s in enumerate(bars):
        xs = [categories.index(str(x)) + (k - (len(bars) - 1) / 2) * width for x in s.x]
        ax.bar(
            xs,
            _nums(s.y),
            width,
            label=s.name,
            color=_colour(s.color),
            yerr=_error(s),
            capsize=3,
            ecolor="#333",
        )
    ax.set_xticks(
        range(len(categories)),
        categories,
        rotation=30 if len(categories) > 4 else 0,
        ha="right" if len(categories) > 4 else "center",
    )


def _draw_series(ax: Axes, s: Series, categorical: bool, categories: list[str]) -> None:
    xs: list[float] = [categories.index(str(x)) for x in s.x] if categorical else _nums(s.x)
    ys = _nums(s.y)
    colour = _colour(s.color)
    if s.style == "band" and s.low is not None and s.high is not None:
        ax.fill_between(xs, _nums(s.low), _nums(s.high), color=colour, alpha=0.15, linewidth=0, label=s.name)
        return
    line = {"dashed": "--", "dotted": ":"}.get(s.style, "-")
    marker = "o" if s.style in ("markers", "line+markers") else None
    if s.style == "markers":
        line = "none"
    err = _error(s)
    if err is not None:
        ax.errorbar(xs, ys, yerr=err, fmt="o", color=colour, capsize=3, label=s.name, markersize=5)
    else:
        ax.plot(
            xs, ys, linestyle=line, marker=marker, color=colour, label=s.name, linewidth=1.6, markersize=4
        )


def _draw_panel(ax: Axes, panel: Panel, chart: Chart, categories: list[str]) -> None:
    bars = [s for s in panel.series if s.style == "bar"]
    if bars:
        _draw_bars(ax, bars, categories)
    for s in panel.series:
        if s.style != "bar":
            _draw_series(ax, s, chart.categorical, categories)
    for y, label in panel.lines:
        ax.axhline(y, color="#7a7f87", linestyle="--", linewidth=0.8)
        ax.annotate(
            label,
            (1, y),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize=7,
            color="#5a5f66",
        )
    if chart.shade is not None:
        ax.axvspan(*chart.shade, color="#8a8f98", alpha=0.12, linewidth=0)
    if panel.log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(panel.y_title)
    if panel.title:
        ax.set_title(panel.title, loc="left", fontsize=8, fontweight="bold")
    if len(panel.series) > 1 or bars:
        # Beside the panel, as in the interactive chart: a legend inside would cover the data.
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))


def render_svg(chart: Chart, path: Path) -> Path:
    """Draws the chart into ``path`` (an .svg file) and returns it."""
    n = len(chart.panels)
    base = PANEL_IN if n < 3 else PANEL_IN_STACKED
    heights = [
        max(base, LEGEND_ROW_IN * (len(p.series) + len(p.lines)) + 0.4) + (TITLE_ROW_IN if p.title else 0.0)
        for p in chart.panels
    ]
    figure = Figure(figsize=(WIDTH_IN, TITLE_IN + sum(heights)), layout="constrained")
    axes = figure.subplots(n, 1, sharex=True, squeeze=False, height_ratios=heights)[:, 0]
    categories = (
        list(dict.fromkeys(str(x) for p in chart.panels for s in p.series for x in s.x))
        if chart.categorical
        else []
    )
    for ax, panel in zip(axes, chart.panels, strict=True):
        _draw_panel(ax, panel, chart, categories)
    if chart.log_x:
        axes[-1].set_xscale("log")
    axes[-1].set_xlabel(chart.x_title)
    figure.suptitle(chart.title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    return path
