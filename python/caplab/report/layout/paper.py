"""The seed paper's capacity table with ours beside it (``paper: {capacity, limit}``), labelled as
the paper's hardware: the values differ by machine; which resource limits, and the order of the
configurations, are what to compare."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Column, Table, num_cell, text_cell
from caplab.report.model.types import Results


def paper_table(results: Results) -> Table | None:
    paper = results.get("paper")
    if not paper or not paper["rows"]:
        return None
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
            ]
        )
    users = any(e["unit"] == "users" for e in results["capacity"])
    unit = (
        "users" if users else "msg/s"
    )  # a closed model is searched in users, the seed papers' rates in messages
    columns = [
        Column(paper["factor"] or "configuration"),
        Column("ours", True, f"{unit}, this machine"),
        Column("consistency"),
        Column("our limit"),
        Column("as the paper says"),
        Column("paper", True, f"{unit}, its hardware"),
        Column("paper's limit"),
    ]
    note = (
        f"The paper's figures: {paper['source']}. Ours are measured here, on emulated hardware; compare "
        "which resource limits each configuration and how they rank, not the values."
    )
    return Table(columns, rows, caption="Ours beside the paper's", note=note)
