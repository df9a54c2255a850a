"""A job study's chart: each phase's items per second against the job's size, one line per group
of the other factors (the MIIS paper's internal and external storage), with each point's interval
over repeats — the paper's two figures, drawn from our cells."""

from __future__ import annotations

from caplab.report.layout.charts import Chart, Panel, Series
from caplab.report.model.types import JobRow, Results
from caplab.units import cell_label, is_number


def _size(row: JobRow, size: str) -> float:
    n = row["factors"].get(size)
    return float(n) if is_number(n) else 0.0


def job_chart(results: Results) -> Chart | None:
    """Per phase a panel of items/s against the size factor; None without a size or a rate."""
    jobs = results["jobs"]
    size = jobs["size_factor"] if jobs else None
    if jobs is None or size is None:
        return None
    lines: dict[tuple[str, str], list[JobRow]] = {}
    for r in jobs["rows"]:
        if is_number(r["factors"].get(size)) and is_number(r["items_per_s"]):
            group = cell_label({k: v for k, v in r["factors"].items() if k != size})
            lines.setdefault((r["phase"], group), []).append(r)
    groups = list(dict.fromkeys(g for _, g in lines))
    panels = []
    for phase in dict.fromkeys(p for p, _ in lines):
        series = []
        for (p, group), rows in lines.items():
            if p != phase:
                continue
            rows = sorted(rows, key=lambda r: _size(r, size))
            any_ci = any(r["ci95"] for r in rows)
            series.append(
                Series(
                    group or phase,
                    [_size(r, size) for r in rows],
                    [r["items_per_s"] for r in rows],
                    "line+markers",
                    groups.index(group),
                    low=[r["ci95"][0] if r["ci95"] else None for r in rows] if any_ci else None,
                    high=[r["ci95"][1] if r["ci95"] else None for r in rows] if any_ci else None,
                    hover=[f"{r['label']} · {phase}: {r['items_per_s']:,.0f} items/s" for r in rows],
                )
            )
        panels.append(Panel(f"{phase} (items/s)", series, title=phase))
    if not panels:
        return None
    return Chart(
        "job",
        f"Each phase's items per second against {size}",
        size,
        panels,
        log_x=True,
        caption="Mean over the job's repeats, with its 95 % interval where there were two or more.",
    )
