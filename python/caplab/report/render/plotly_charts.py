"""Charts as Plotly figures (plain JSON: ``{"data": [...], "layout": {...}}``) for index.html, where
plotly.js draws them interactively. Panels of one chart are stacked on one shared x axis, so load,
latency and resources line up in time."""

from __future__ import annotations

import math
from html import escape

from caplab.report.layout.charts import PALETTE, Chart, Panel, Series

PANEL_GAP = 0.07
PANEL_HEIGHT = 210
BASE_HEIGHT = 130
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
GRID = "#e3e6ea"


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _fill(i: int) -> str:
    hex_ = _colour(i).lstrip("#")
    r, g, b = (int(hex_[k : k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},0.15)"


def _error(s: Series) -> dict[str, object] | None:
    if s.low is None or s.high is None:
        return None
    # An interval that does not contain its point (it can happen) draws no bar on that side.
    plus = [
        max(h - y, 0) if h is not None and y is not None else None for h, y in zip(s.high, s.y, strict=True)
    ]
    minus = [
        max(y - lo, 0) if lo is not None and y is not None else None for lo, y in zip(s.low, s.y, strict=True)
    ]
    return {
        "type": "data",
        "symmetric": False,
        "array": plus,
        "arrayminus": minus,
        "thickness": 1.2,
        "width": 4,
    }


def _traces(s: Series, suffix: str, legend: str) -> list[dict[str, object]]:
    base: dict[str, object] = {
        "name": s.name,
        "x": s.x,
        "y": s.y,
        "xaxis": f"x{suffix}",
        "yaxis": f"y{suffix}",
        "legend": legend,
    }
    if s.group:
        base["legendgroup"] = s.group
    if s.hover:
        base["text"] = s.hover
        base["hovertemplate"] = "%{text}<br>%{x}: %{y:.4~g}<extra></extra>"
    colour = _colour(s.color)
    if s.style == "band":
        upper = {
            **base,
            "y": s.high,
            "mode": "lines",
            "line": {"width": 0},
            "showlegend": False,
            "hoverinfo": "skip",
        }
        lower = {
            **base,
            "y": s.low,
            "mode": "lines",
            "line": {"width": 0},
            "fill": "tonexty",
            "fillcolor": _fill(s.color),
        }
        return [{"type": "scatter", **upper}, {"type": "scatter", **lower}]
    if s.style == "bar":
        trace = {"type": "bar", **base, "marker": {"color": colour}}
        if (error := _error(s)) is not None:
            trace["error_y"] = {**error, "color": "#333"}
        return [trace]
    mode = {"markers": "markers", "line+markers": "lines+markers"}.get(s.style, "lines")
    dash = {"dashed": "dash", "dotted": "dot"}.get(s.style, "solid")
    trace = {
        "type": "scatter",
        **base,
        "mode": mode,
        "connectgaps": False,
        "line": {"color": colour, "width": 2, "dash": dash},
        "marker": {"color": colour, "size": 7},
    }
    if (error := _error(s)) is not None:
        trace["error_y"] = {**error, "color": colour}
    return [trace]


def _yaxis(panel: Panel, suffix: str, top: float, bottom: float) -> dict[str, object]:
    axis: dict[str, object] = {
        "title": {"text": panel.y_title, "font": {"size": 12}},
        "domain": [bottom, top],
        "anchor": f"x{suffix}",
        "gridcolor": GRID,
        "zerolinecolor": GRID,
        "automargin": True,
    }
    if panel.log_y:
        axis["type"] = "log"
    else:
        axis["rangemode"] = "tozero"
    return axis


def _xaxis(chart: Chart, suffix: str, last: bool) -> dict[str, object]:
    """Every panel has its own x axis, all matching the first: zoom one, zoom all; only the bottom
    one shows its labels."""
    axis: dict[str, object] = {
        "anchor": f"y{suffix}",
        "gridcolor": GRID,
        "zerolinecolor": GRID,
        "automargin": True,
        "showticklabels": last,
    }
    if suffix:
        axis["matches"] = "x"
    if last:
        axis["title"] = {"text": chart.x_title, "font": {"size": 12}}
    if chart.categorical:
        axis["type"] = "category"
    elif chart.log_x:
        axis["type"] = "log"
    return axis


def _reference_line(
    y: float, label: str, suffix: str, log: bool
) -> tuple[dict[str, object], dict[str, object]]:
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": f"y{suffix}",
        "y0": y,
        "y1": y,
        "line": {"color": "#7a7f87", "width": 1, "dash": "dash"},
    }
    note = {
        "text": label,
        "xref": "paper",
        "x": 1,
        "xanchor": "right",
        "yref": f"y{suffix}",
        # An annotation on a log axis is placed by the exponent (a shape by the value).
        "y": math.log10(y) if log and y > 0 else y,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 10, "color": "#5a5f66"},
    }
    return shape, note


def _panel_title(text: str, top: float) -> dict[str, object]:
    """The group of cells a panel shows, above its top left corner."""
    return {
        "text": f"<b>{escape(text)}</b>",
        "xref": "paper",
        "x": 0,
        "xanchor": "left",
        "yref": "paper",
        "y": top,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 11, "color": "#1d2733"},
    }


def _shade(chart: Chart) -> tuple[dict[str, object], dict[str, object]] | None:
    if chart.shade is None:
        return None
    x0, x1 = chart.shade
    rect = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": x0,
        "x1": x1,
        "y0": 0,
        "y1": 1,
        "fillcolor": "#8a8f98",
        "opacity": 0.12,
        "line": {"width": 0},
        "layer": "below",
    }
    note = {
        "text": chart.shade_label,
        "xref": "x",
        "x": (x0 + x1) / 2,
        "yref": "paper",
        "y": 1,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 10, "color": "#5a5f66"},
    }
    return rect, note


def _legend(top: float) -> dict[str, object]:
    """Each panel's own legend, beside it on the right: the series of a panel are read together."""
    return {
        "x": 1.01,
        "xanchor": "left",
        "y": top,
        "yanchor": "top",
        "font": {"size": 11},
        "bgcolor": "rgba(255,255,255,0.8)",
        "tracegroupgap": 2,
    }


def figure(chart: Chart) -> dict[str, object]:
    """The Plotly figure of a chart."""
    n = len(chart.panels)
    height = (1.0 - PANEL_GAP * (n - 1)) / n
    data: list[dict[str, object]] = []
    shapes: list[dict[str, object]] = []
    notes: list[dict[str, object]] = []
    layout: dict[str, object] = {}
    for i, panel in enumerate(chart.panels):
        suffix = "" if i == 0 else str(i + 1)
        top = 1.0 - i * (height + PANEL_GAP)
        layout[f"yaxis{suffix}"] = _yaxis(panel, suffix, top, max(top - height, 0.0))
        layout[f"xaxis{suffix}"] = _xaxis(chart, suffix, i == n - 1)
        legend = f"legend{suffix}"
        layout[legend] = _legend(top)
        for s in panel.series:
            data += _traces(s, suffix, legend)
        if panel.title:
            notes.append(_panel_title(panel.title, top))
        for y, label in panel.lines:
            shape, note = _reference_line(y, label, suffix, panel.log_y)
            shapes.append(shape)
            notes.append(note)
    if (shade := _shade(chart)) is not None:
        shapes.append(shade[0])
        notes.append(shade[1])
    layout.update(
        {
            "title": {"text": chart.title, "x": 0, "xanchor": "left", "font": {"size": 15}},
            "height": BASE_HEIGHT + PANEL_HEIGHT * n,
            "margin": {"l": 70, "r": 20, "t": 60, "b": 60},
            "font": {"family": FONT, "size": 12, "color": "#1d2733"},
            "paper_bgcolor": "#ffffff",
            "plot_bgcolor": "#ffffff",
            "hovermode": "closest",
            "barmode": "group",
            "bargap": 0.25,
            "shapes": shapes,
            "annotations": notes,
        }
    )
    return {"data": data, "layout": layout}
