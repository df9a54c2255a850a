"""The seed paper's capacity table with ours beside it (``paper: {capacity, limit}``), labelled as
the paper's hardware: the values differ by machine; which resource limits, and the order of the
configurations, are what to compare."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Column, Table, TableCell, num_cell, text_cell
from caplab.report.model.types import Results


def paper_table(results: Results) -> Table | None:
    paper = results.get("paper")
    if not paper or not paper["rows"]:
        return None
    cpu = any(r["paper_cpu_percent"] is not None for r in paper["rows"])
    rate = any(r["paper_rate"] is not None for r in paper["rows"])
    rows = []
    for r in paper["rows"]:
        differs = (
            r["ours_kind"] is not None and r["paper_limit"] is not None and r["ours_kind"] != r["paper_limit"]
        )
        rows.append(
            [
                text_cell(r["value"]),
                num_cell(r["ours"], u.num(r["ours"]) if r["ours"] is not None else "—"),
                text_cell(r["ours_consistency"] or "—"),
                text_cell(r["ours_limit"] or "—"),
                text_cell(r["ours_kind"] or "—", "warn" if differs else ""),
                num_cell(r["paper"], u.num(r["paper"]) if r["paper"] is not None else "—"),
                text_cell(r["paper_limit"] or "—"),
                *([num_cell(r["paper_cpu_percent"], u.percent(r["paper_cpu_percent"]))] if cpu else []),
                *([num_cell(r["paper_rate"], u.rate(r["paper_rate"]))] if rate else []),
            ]
        )
    # A closed model is searched in users; the other seed papers' figures are messages per second.
    unit = "users" if any(e["unit"] == "users" for e in results["capacity"]) else "msg/s"
    columns = [
        Column(paper["factor"] or "configuration"),
        Column("ours", True, f"{unit}, this machine"),
        Column("consistency"),
        Column("our limit"),
        Column("as the paper says"),
        Column("paper", True, f"{unit}, its hardware"),
        Column("paper's limit"),
    ]
    if cpu:
        columns.append(Column("paper's CPU", True, "its hardware"))
    if rate:
        columns.append(Column("paper's messages", True, "its hardware"))
    note = (
        f"The paper's figures: {paper['source']}. Ours are measured here, on emulated hardware; compare "
        "which resource limits each configuration and how they rank, not the values."
    )
    if paper["recommendation"]:
        note += f" The paper recommends {paper['recommendation']}."
    return Table(columns, rows, caption="Ours beside the paper's", note=note)


def paper_recovery_table(results: Results) -> Table | None:
    """The paper's failover times beside ours, a row per action and database count."""
    paper = results.get("paper_recovery")
    if not paper or not paper["rows"]:
        return None

    def seconds(value: float | None) -> TableCell:
        return num_cell(value, f"{value:.1f}" if value is not None else u.DASH)

    rows = [
        [
            text_cell(r["action"]),
            num_cell(r["databases"], u.num(r["databases"])),
            seconds(r["group_s"]),
            seconds(r["database_s"]),
            num_cell(r["trials"], u.num(r["trials"])),
            num_cell(r["paper_databases"], u.num(r["paper_databases"]) if r["paper_databases"] else u.DASH),
            seconds(r["paper_group_s"]),
            seconds(r["paper_database_s"]),
        ]
        for r in paper["rows"]
    ]
    columns = [
        Column("action"),
        Column("databases", True, "ours"),
        Column("group", True, "s, ours (p50)"),
        Column("last database", True, "s, ours (p50)"),
        Column("trials", True),
        Column("databases", True, "the paper's"),
        Column("AG level", True, "s, its hardware"),
        Column("DB level", True, "s, its hardware"),
    ]
    where = ", ".join(f"{k} {v}" for k, v in paper["cells"].items())
    note = (
        f"The paper's figures: {paper['source']}. Ours: medians over the trials"
        + (f" of the cells with {where}" if where else "")
        + " — the group time until a primary took writes, and the last database's first commit (the "
        "paper's DB level). Each of our database counts stands for the paper's beside it (scaled to "
        "this machine). An availability group recovers database by database, PostgreSQL promotes an "
        "instance: compare how each level grows with the count, not the seconds."
    )
    return Table(columns, rows, caption="Recovery beside the paper's", note=note)
