"""The Recovery section's timeline: each failover as a row, each of its phases a mark at its
seconds after the fault — the HA manager's (detected, elected, promoted, writable) and the
clients' (first commit, last database, load back) on one clock. A long gap before one mark is
the step to tune; rows side by side show whether it is the same step every time."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.charts import Chart, Panel, Series
from caplab.report.layout.failover import PHASE_COLUMNS
from caplab.report.model.types import Results


def phases_chart(results: Results) -> Chart | None:
    """One series of marks per phase over the failovers that reported their manager's phases
    (numbered 1, 2, … in the phases table's order); None when none did."""
    rows: list[tuple[str, list[float | None]]] = []
    for c in results["cells"]:
        for f in c["failover"]:
            p = f.get("phases")
            if p:
                where = f"#{c['index']} {u.cell_label(c['factors'])} · trial {f['trial'] + 1} · {f['action']}"
                rows.append((where, [pick(p) for pick, _ in PHASE_COLUMNS]))
    if not rows:
        return None
    series = []
    for i, (_, name) in enumerate(PHASE_COLUMNS):
        xs: list[float] = []
        ys: list[float | None] = []
        hover: list[str] = []
        for n, (where, at) in enumerate(rows, start=1):
            value = at[i]
            if value is not None:
                xs.append(value)
                ys.append(float(n))
                hover.append(f"{where}: {name} {value:.2f} s after the fault")
        if xs:
            series.append(Series(name, xs, ys, "markers", i, hover=hover))
    return Chart(
        "failover-phases",
        "Failover phases: seconds after the fault",
        "seconds after the fault",
        [Panel("failover (row of the phases table)", series)],
        caption=(
            "Each failover is a row; each mark a phase's end, the HA manager's record and the clients' "
            "series on the trial's clock. The gap before a mark is the step that phase ends."
        ),
    )
