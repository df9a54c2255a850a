"""The study-wide charts: throughput and latency against load, capacity per configuration,
resource use per configuration, and each scaling fit. Built from the results document alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from caplab.analysis.slo import SloError, parse_slo
from caplab.report.layout.charts import IDLE_DISK_PERCENT, Chart, Panel, Series, present, worth
from caplab.report.model.scenario import goal_text
from caplab.report.model.types import (
    CapacityEntry,
    CellResult,
    Measured,
    Rating,
    Results,
    ScalingEntry,
    SearchTrial,
)
from caplab.report.text.intervals import error_bars
from caplab.units import cell_label, is_number

LATENCY_METRICS = ("p50", "p90", "p95", "p99", "p999", "max", "mean")
MAX_CELLS_PER_PANEL = 6
"""More cells than this in a chart of lines (the knee, latency) are drawn one panel per group of
cells (e.g. one per store count × flow), a line per level of the factor left: 32 lines in one
panel are a tangle nobody reads."""


class _Point(TypedDict):
    load: float
    throughput: float | None
    p50: float | None
    p99: float | None
    hover: str


def _hover(label: str, trial: SearchTrial) -> str:
    verdict = "pass" if trial["passed"] else "fail: " + "; ".join(trial["reasons"][:2])
    return f"{label} · {trial['phase']} at {trial['load']:g}: {verdict}"


def _points(cell: CellResult) -> list[_Point]:
    """(load, throughput, p50, p99, hover) of a cell's trials: its search probes, else its fixed trials."""
    if cell["search"]:
        rows = [
            _Point(
                load=t["load"],
                throughput=t["throughput"],
                p50=t["p50_ms"],
                p99=t["p99_ms"],
                hover=_hover(cell["label"], t),
            )
            for t in cell["search"]["trials"]
            if is_number(t["load"])
        ]
    else:
        rows = [
            _Point(
                load=load,
                throughput=t["throughput"],
                p50=t["p50_ms"],
                p99=t["p99_ms"],
                hover=f"{cell['label']} · trial {t['index']}",
            )
            for t in cell["trials"]
            if is_number(load := t["offered_rate"] if t["offered_rate"] is not None else t["users"])
        ]
    return sorted(rows, key=lambda r: r["load"])


def _load_unit(results: Measured) -> str:
    return "users" if results["scenario"].get("model") == "closed" else "offered load (req/s)"


@dataclass(frozen=True)
class Line:
    """A cell as one line of a chart: its name in its panel and its colour."""

    cell: CellResult
    name: str
    color: int


def cell_groups(results: Measured) -> list[tuple[str, list[Line]]]:
    """The cells in panels: all in one, or — past ``MAX_CELLS_PER_PANEL`` — one panel per group
    of the naming factors but one, the line factor (the numeric one with the most levels), whose
    level gives a line its name and colour in every panel (hosts=2 is the same colour throughout)."""
    cells = results["cells"]
    naming = list(results["matrix"].get("naming") or [])
    levels = results["matrix"]["factors"]
    if len(cells) <= MAX_CELLS_PER_PANEL or len(naming) < 2:
        return [("", [Line(c, c["label"], i) for i, c in enumerate(cells)])]
    line = max(naming, key=lambda n: (all(is_number(v) for v in levels[n]), len(levels[n])))
    groups: dict[str, list[Line]] = {}
    for c in cells:
        value = c["factors"].get(line)
        group = cell_label({k: c["factors"].get(k) for k in naming if k != line})
        colour = levels[line].index(value) if value in levels[line] else len(levels[line])
        groups.setdefault(group, []).append(Line(c, cell_label({line: value}), colour))
    return list(groups.items())


def knee_chart(results: Measured) -> Chart | None:
    """Throughput against offered load, per cell: where it leaves the diagonal is the knee."""
    closed = results["scenario"].get("model") == "closed"
    panels = []
    for title, lines in cell_groups(results):
        series = []
        top = 0.0
        for line in lines:
            rows = _points(line.cell)
            if not rows:
                continue
            xs = [r["load"] for r in rows]
            top = max(top, *xs)
            hover = [r["hover"] for r in rows]
            ys = [r["throughput"] for r in rows]
            series.append(Series(line.name, xs, ys, "line+markers", line.color, hover=hover))
        if not series:
            continue
        if not closed:
            series.insert(0, Series("offered = achieved", [0, top], [0, top], "dotted", 7))
        panels.append(Panel("throughput (req/s)", series, title=title))
    if not panels:
        return None
    return Chart(
        "knee",
        "Throughput against offered load",
        _load_unit(results),
        panels,
        caption="Each trial of each cell (the search's probes, or the fixed-load trials). Below the knee the "
        "line follows the diagonal; past it the system falls behind and queues grow.",
    )


def latency_chart(results: Measured) -> Chart | None:
    """Latency percentiles against load, per cell (p99 solid, p50 dashed), on a log scale."""
    panels = []
    for title, lines in cell_groups(results):
        series = []
        for line in lines:
            rows = _points(line.cell)
            xs = [r["load"] for r in rows]
            hover = [r["hover"] for r in rows]
            p99 = [r["p99"] for r in rows]
            p50 = [r["p50"] for r in rows]
            group = f"{title} {line.name}" if title else line.name
            if present(p99):
                series.append(
                    Series(f"{line.name} p99", xs, p99, "line+markers", line.color, hover=hover, group=group)
                )
            if present(p50):
                series.append(
                    Series(f"{line.name} p50", xs, p50, "dashed", line.color, hover=hover, group=group)
                )
        if series:
            panels.append(
                Panel("latency (ms, log scale)", series, log_y=True, lines=_slo_lines(results), title=title)
            )
    if not panels:
        return None
    return Chart(
        "latency",
        "Latency percentiles against offered load",
        _load_unit(results),
        panels,
        caption="Latency is timed from each request's intended send time (coordinated omission corrected).",
    )


def _slo_lines(results: Measured) -> list[tuple[float, str]]:
    """The latency SLOs as reference lines (their value is in ms)."""
    lines = []
    for text in results["scenario"].get("slo") or []:
        try:
            slo = parse_slo(text)
        except SloError:
            continue
        if slo.metric in LATENCY_METRICS and slo.op in ("<=", "<"):
            lines.append((slo.value, f"SLO {text}"))
    return lines


def capacity_chart(results: Results) -> Chart | None:
    """What each configuration sustained, with its interval (labelled by its kind: a search's bracket
    or a 95% t-interval over replicates) and the goal line."""
    entries = [e for e in results["capacity"] if is_number(e["value"])]
    if not entries:
        return None
    basis = "capacity" if any(e["basis"] == "capacity" for e in entries) else "throughput"
    labels = [e["label"] for e in entries]
    lows = [e["ci95"][0] for e in entries]
    highs = [e["ci95"][1] for e in entries]
    series = [Series(basis, labels, [e["value"] for e in entries], "bar", 0, low=lows, high=highs)]
    if entries[0]["unit"] == entries[0]["rated_unit"]:  # users rated by their throughput: another axis
        rated = _rated(results, entries)
        headroom = results["recommendation"]["headroom"]
        series.append(Series(f"rated ({headroom:.0%} headroom)", labels, rated, "bar", 2))
    lines = []
    goal = results.get("goal")
    if goal and (goal.get("unit") == "users") == (entries[0]["unit"] == "users"):  # on this axis
        lines.append((goal["rate"], f"goal {goal_text(goal)}"))
    unit = "users" if entries[0]["unit"] == "users" else "req/s"
    return Chart(
        "capacity",
        f"{basis.capitalize()} per configuration",
        "configuration",
        [Panel(f"{basis} ({unit})", series, lines=lines)],
        categorical=True,
        caption=f"{error_bars((e['interval'], e['replicates']) for e in entries)} Rated: the capacity less "
        "the headroom kept for peaks and growth.".lstrip(),
    )


def _rated(results: Results, entries: list[CapacityEntry]) -> list[float | None]:
    """What each configuration is rated for, in the order of ``entries``."""
    by_cell: dict[int, Rating] = {r["cell"]: r for r in results["recommendation"]["ratings"]}
    return [r["rated"] if (r := by_cell.get(e["cell"])) else None for e in entries]


def scaling_chart(entry: ScalingEntry, number: int) -> Chart | None:
    """Measured points, the fitted law, its 95% interval and the extrapolation — or, when no law is
    a model of the points, the points and their peak alone."""
    fit = entry.get("fit")
    points = entry["points"]
    what = "capacity" if entry["metric"] == "capacity_rps" else "throughput"
    series = [
        Series(f"measured {what}", [p["n"] for p in points], [p["throughput"] for p in points], "markers", 0)
    ]
    if fit:
        preds = fit.get("predictions") or []
        series.insert(
            0,
            Series(
                "95% interval",
                [p["n"] for p in preds],
                [p["throughput"] for p in preds],
                "band",
                0,
                low=[p["low"] for p in preds],
                high=[p["high"] for p in preds],
            ),
        )
        curve = entry.get("curve") or []
        series.append(
            Series(
                f"{fit['model']} fit", [p["n"] for p in curve], [p["throughput"] for p in curve], "line", 1
            )
        )
        measured = max(p["n"] for p in points)
        beyond = [p for p in preds if p["n"] > measured]
        if beyond:
            series.append(
                Series(
                    "extrapolated",
                    [p["n"] for p in beyond],
                    [p["throughput"] for p in beyond],
                    "markers",
                    3,
                    low=[p["low"] for p in beyond],
                    high=[p["high"] for p in beyond],
                )
            )
    peak = entry.get("peak")
    if not fit and peak:
        series.append(Series("measured peak", [peak["n"]], [peak["throughput"]], "markers", 3))
    where = f" ({entry['group_label']})" if entry.get("group_label") else ""
    caption = (
        "The fitted law X(N) = λN / (1 + σ(N−1) + κN(N−1)) with its 95% bootstrap interval "
        "at the measured and extrapolated N."
        if fit
        else "The measured points and their peak only: no scalability law is a model of them (the "
        "text says why), so nothing is drawn between or beyond them."
    )
    return Chart(
        f"scaling-{number}",
        f"Scaling: {what} against {entry['factor']}{where}",
        entry["factor"],
        [Panel(f"{what} (req/s)", series)],
        caption=caption,
    )


def resources_chart(results: Measured) -> Chart | None:
    """Resource use per cell at its capacity (or fixed load): CPU per role, disk, network."""
    cells = [c for c in results["cells"] if c["resources"]]
    if not cells:
        return None
    labels = [c["label"] for c in cells]
    scopes = list(dict.fromkeys([r for c in cells for r in c["roles"]] + ["generator", "host"]))

    def cpu(c: CellResult, scope: str) -> float | None:
        return (c["resources"].get(scope) or {}).get("cpu_percent")

    cpu_series = [
        Series(scope, labels, [cpu(c, scope) for c in cells], "bar", i)
        for i, scope in enumerate(scopes)
        if present([cpu(c, scope) for c in cells])
    ]
    cores = results["environment"].get("cores")
    lines = [(100.0 * cores, f"all {cores} cores")] if is_number(cores) else []
    panels = [Panel("CPU (% of one core)", cpu_series, lines=lines)]
    host = [c["resources"].get("host") or {} for c in cells]
    disk = [h.get("disk_busy_percent") for h in host]
    if worth(disk, IDLE_DISK_PERCENT):
        panels.append(Panel("busiest disk (% busy)", [Series("disk busy", labels, disk, "bar", 5)]))
    rx = [h.get("net_rx_mb_s") for h in host]
    tx = [h.get("net_tx_mb_s") for h in host]
    if present(rx) or present(tx):
        panels.append(
            Panel(
                "network (MB/s)",
                [Series("received", labels, rx, "bar", 9), Series("sent", labels, tx, "bar", 6)],
            )
        )
    return Chart(
        "resources",
        "Resource use per configuration",
        "configuration",
        panels,
        categorical=True,
        caption="Means over the measured window of the trials at capacity (or at the fixed load).",
    )


def summary_charts(results: Results) -> dict[str, Chart]:
    """The study-wide charts by id (those with data)."""
    charts = [
        capacity_chart(results),
        knee_chart(results),
        latency_chart(results),
        resources_chart(results),
        *(scaling_chart(e, i) for i, e in enumerate(results["scaling"])),
    ]
    return {c.id: c for c in charts if c is not None}
