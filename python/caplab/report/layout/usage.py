"""A usage profile's results at capacity: each action's rate, errors and latency (the paper's
per-protocol figures), and the actions per user-hour offered against those reached."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Column, Table, TableCell, num_cell, text_cell
from caplab.report.model.types import CellResult, PerUserRow, Results
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


def cpu_per_user_table(results: Results) -> Table | None:
    """Each role's CPU per thousand users in every cell that ran users, against the first such
    cell: the seed's "how the mix and the message size move CPU" (46 → 108 KB: 70 → 90 % at the
    same users), read as a ratio so that cells at different user counts compare. None unless two
    or more cells ran users with their roles' CPU measured."""
    cells = [
        c
        for c in results["cells"]
        if c["status"] == "complete"
        and (c["metrics"]["users"] or 0) > 0
        and any("cpu_percent" in c["resources"].get(r, {}) for r in c["roles"])
    ]
    if len(cells) < 2:
        return None
    roles = [r for r in cells[0]["roles"] if any("cpu_percent" in c["resources"].get(r, {}) for c in cells)]

    def per_thousand(c: CellResult, role: str) -> float | None:
        cpu = c["resources"].get(role, {}).get("cpu_percent")
        users = c["metrics"]["users"] or 0
        return 1000.0 * cpu / users if cpu is not None and users else None

    by_role = [[per_thousand(c, r) for r in roles] for c in cells]
    # The servers under test are the roles on a profile (the paper's combined server: its client
    # access and transport, not the mailbox servers beside it); without profiles, every role.
    profiled = [r for r in roles if any("quota_cpus" in c["resources"].get(r, {}) for c in cells)]
    summed = profiled or roles
    totals = [
        sum(p for r, p in zip(roles, row, strict=True) if p is not None and r in summed) for row in by_role
    ]
    sum_name = "+".join(summed) if profiled and len(profiled) < len(roles) else "all roles"
    paper = _paper_cpu_per_thousand(results, cells)
    paper_base = paper[0] if paper else None
    rows = []
    for i, c in enumerate(cells):
        row = [
            text_cell(c["label"]),
            num_cell(c["metrics"]["users"], u.num(c["metrics"]["users"])),
            num_cell(c["metrics"]["throughput"], u.rate(c["metrics"]["throughput"])),
            *(num_cell(p, u.percent(p)) for p in by_role[i]),
            num_cell(totals[i], u.percent(totals[i])),
            _ratio_cell(totals[i], totals[0]),
        ]
        if paper:
            row += [num_cell(paper[i], u.percent(paper[i])), _ratio_cell(paper[i], paper_base)]
        rows.append(row)
    columns = [
        Column("configuration"),
        Column("users", True),
        Column("actions", True, "completed/s"),
        *(Column(role, True, "CPU per 1,000 users") for role in roles),
        Column(sum_name, True, "CPU per 1,000 users"),
        Column("against the first", True, "ratio"),
    ]
    note = (
        "Each role's CPU (% of one host core, over the measured trials; at capacity for a searched "
        f"cell) for every thousand users, and {sum_name}'s against the first configuration's: how "
        f"the mix and the message size move the CPU a user costs. First: {cells[0]['label']}."
        + (
            " The sum is of the roles on a hardware profile: the servers under test."
            if sum_name != "all roles"
            else ""
        )
    )
    if paper:
        columns += [Column("paper", True, "CPU per 1,000 users, its hardware"), Column("paper's ratio", True)]
        comparison = results.get("paper")
        source = comparison["source"] if comparison else ""
        note += (
            f" The paper's: its CPU at its users ({source}), in % of its server's cores, so compare the "
            "ratios, not the values."
        )
    return Table(columns, rows, caption="CPU per user", note=note)


def _ratio_cell(value: float | None, base: float | None) -> TableCell:
    ratio = value / base if value is not None and base else None
    return num_cell(ratio, f"{ratio:.2f}" if ratio is not None else u.DASH)


def _paper_cpu_per_thousand(results: Results, cells: list[CellResult]) -> list[float | None] | None:
    """The paper's CPU per thousand users for each cell (its ``cpu_percent`` at its ``capacity``
    in users, by the paper block's factor), or None when the paper gives neither for any."""
    paper = results.get("paper")
    if not paper or not paper["factor"]:
        return None
    rows = {r["value"]: r for r in paper["rows"]}
    out: list[float | None] = []
    for c in cells:
        r = rows.get(str(c["factors"].get(paper["factor"])))
        users, cpu = (r["paper"], r["paper_cpu_percent"]) if r else (None, None)
        out.append(1000.0 * cpu / users if users and cpu is not None else None)
    return out if any(v is not None for v in out) else None
