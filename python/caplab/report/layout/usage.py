"""A usage profile's results at capacity: each action's rate, errors and latency (the paper's
per-protocol figures), and the actions per user-hour offered against those reached."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Column, Table, TableCell, num_cell, text_cell
from caplab.report.model.types import PerUserRow, Results
from caplab.report.text.usage import per_user_note, reached_share


def actions_table(results: Results) -> Table | None:
    """Each action of each searched cell at its capacity; None when no cell ran a usage profile."""
    rows = []
    by_cell = {c["index"]: c for c in results["cells"]}
    for e in results["capacity"]:
        cap = by_cell[e["cell"]]["metrics"]["capacity"]
        for a in cap["actions"] if cap else []:
            done = a["completed"] + a["errors"]
            rows.append(
                [
                    text_cell(e["label"]),
                    text_cell(a["name"]),
                    num_cell(a["per_s"], u.rate(a["per_s"])),
                    num_cell(a["completed"], u.num(a["completed"])),
                    TableCell(u.num(a["errors"]), a["errors"], "bad" if a["errors"] else ""),
                    num_cell(
                        a["errors"] / done if done else None, u.pct(a["errors"] / done) if done else u.DASH
                    ),
                    num_cell(a["p50_ms"], u.ms(a["p50_ms"])),
                    num_cell(a["p90_ms"], u.ms(a["p90_ms"])),
                    num_cell(a["p95_ms"], u.ms(a["p95_ms"])),
                    num_cell(a["p99_ms"], u.ms(a["p99_ms"])),
                ]
            )
    if not rows:
        return None
    columns = [
        Column("configuration"),
        Column("action"),
        Column("rate", True, "completed/s"),
        Column("completed", True),
        Column("errors", True),
        Column("error share", True),
        Column("p50", True),
        Column("p90", True),
        Column("p95", True),
        Column("p99", True),
    ]
    note = (
        "Each action of the usage profile over the confirmation trials at the configuration's capacity: "
        "completions per second of measured time, errors, and latency from the merged histograms (a "
        "percentile the trials hold too few replies for is left out)."
    )
    return Table(columns, rows, caption="Actions at capacity", note=note)


def per_user_table(results: Results) -> Table | None:
    """Actions per user-hour offered and reached at each searched cell's capacity."""
    found: list[tuple[str, PerUserRow]] = []
    by_cell = {c["index"]: c for c in results["cells"]}
    for e in results["capacity"]:
        cap = by_cell[e["cell"]]["metrics"]["capacity"]
        if cap is not None and cap["per_user"] is not None:
            found.append((e["label"], cap["per_user"]))
    if not found:
        return None
    rows = [
        [
            text_cell(label),
            num_cell(p["offered_per_hour"], u.num(p["offered_per_hour"])),
            num_cell(p["achieved_per_hour"], u.num(p["achieved_per_hour"])),
            num_cell(share, u.pct(share)) if (share := reached_share(p)) is not None else text_cell(u.DASH),
        ]
        for label, p in found
    ]
    columns = [
        Column("configuration"),
        Column("offered", True, "actions/user-hour"),
        Column("reached", True, "actions/user-hour"),
        Column("reached of offered", True),
    ]
    return Table(columns, rows, caption="Actions per user", note=per_user_note(found))
