"""Each trial over time as a chart: throughput, latency and the resources sampled on the same
clock, in stacked panels sharing one time axis, the warm-up shaded — where a queue starts to grow,
the CPU that saturates is right below it."""

from __future__ import annotations

from caplab.report.layout.charts import IDLE_DISK_PERCENT, Chart, Panel, Series, Style, present, worth
from caplab.report.model.types import Json, Measured, TrialSeries
from caplab.units import is_number


def timeline_chart(series: TrialSeries, label: str, roles_colours: dict[str, int], cores: Json) -> Chart:
    """One trial over time: throughput, latency and resources on the same time axis."""
    t = series["t"]
    panels = []
    load = [Series("throughput", t, series["throughput"], "line", 0)]
    if series.get("offered_rate"):
        load.append(
            Series(
                "offered", [t[0], t[-1]] if t else [], [series["offered_rate"]] * (2 if t else 0), "dotted", 7
            )
        )
    if present(series["errors_per_s"]) and any(v for v in series["errors_per_s"] if v):
        load.append(Series("errors/s", t, series["errors_per_s"], "line", 3))
    panels.append(Panel("req/s", load))
    percentiles: list[tuple[str, list[float | None], Style, int]] = [
        ("p50", series["latency_p50_ms"], "line", 0),
        ("p99", series["latency_p99_ms"], "line", 1),
        ("max", series["latency_max_ms"], "dotted", 3),
    ]
    latency = [Series(name, t, ys, style, c) for name, ys, style, c in percentiles if present(ys)]
    panels.append(Panel("latency (ms)", latency))
    res = series["resources"]
    cpu = [
        Series(name, res["t"], values, "line", roles_colours.get(name, 8))
        for name, values in res["cpu_percent"].items()
        if present(values)
    ]
    lines = [(100.0 * cores, f"all {cores} cores")] if is_number(cores) else []
    if cpu:
        panels.append(Panel("CPU (% of one core)", cpu, lines=lines))
    io = []
    if worth(res["disk_busy_percent"], IDLE_DISK_PERCENT):
        io.append(Series("disk busy %", res["t"], res["disk_busy_percent"], "line", 5))
    if io:
        panels.append(Panel("disk (% busy)", io))
    net = [
        Series(name, res["t"], ys, "line", colour)
        for name, ys, colour in (("net received", res["net_rx_mb_s"], 9), ("net sent", res["net_tx_mb_s"], 6))
        if present(ys)
    ]
    if net:
        panels.append(Panel("network (MB/s)", net))
    app = [Series(name, res["t"], values, "line", i) for i, (name, values) in enumerate(res["app"].items())]
    if app:
        panels.append(Panel("application counters", app))
    warmup = series.get("warmup_s") or 0.0
    kind = str(series["kind"]).removeprefix("search:")
    at = (
        f" at {series['offered_rate']:g}/s"
        if series.get("offered_rate")
        else (f" with {series['users']} users" if series.get("users") else "")
    )
    return Chart(
        f"timeline-{series['cell']}-{kind}-{series['index']}",
        f"{label} — {kind} trial {(series['index'] or 0) + 1}{at}",
        "seconds since the trial started (each point ends an interval)",
        panels,
        shade=(0.0, float(warmup)) if warmup else None,
        shade_label="warm-up",
    )


def role_colours(results: Measured) -> dict[str, int]:
    """The same colour for a role in every chart."""
    names = list(dict.fromkeys([r for c in results["cells"] for r in c["roles"]] + ["generator", "host"]))
    return {n: i for i, n in enumerate(names)}


def timeline_charts(results: Measured) -> list[tuple[TrialSeries, Chart]]:
    labels = {c["index"]: c["label"] for c in results["cells"]}
    colours = role_colours(results)
    cores = results["environment"].get("cores")
    return [
        (s, timeline_chart(s, labels.get(s["cell"], str(s["cell"])), colours, cores))
        for s in results["series"]
    ]
