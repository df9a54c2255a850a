"""The Methodology section, the report's last: the checklist graded from the study's record
(analysis/methodology.py), each principle's grade with its reason and, where the study falls short,
the setting to write in the study file."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Block, Column, Para, Section, Table, TableCell, text_cell
from caplab.report.model.types import MethodologyItem, Results

TONES = {"pass": "good", "warn": "warn", "fail": "bad"}
INTRO = (
    "How far this study can be trusted and repeated, graded from its own record against the principles "
    "of Papadopoulos et al., “Methodological Principles for Reproducible Performance Evaluation in Cloud "
    "Computing” (TSE 2019): pass, warn (true with a caveat) or fail (the figures cannot be trusted on "
    "that count), with the change to the study file where it falls short."
)


def change_text(item: MethodologyItem) -> str:
    """The setting on one line (its YAML lines joined by ``;``) and why; ``—`` when none is needed."""
    change = item["change"]
    if change is None:
        return u.DASH
    setting = "; ".join(line.strip() for line in (change["setting"] or "").splitlines() if line.strip())
    return f"{setting} — {change['why']}" if setting else change["why"]


def methodology_table(items: list[MethodologyItem]) -> Table:
    rows: list[list[TableCell]] = [
        [
            text_cell(item["title"]),
            text_cell(item["grade"], TONES[item["grade"]]),
            text_cell(u.free_text(item["reason"])),
            text_cell(u.free_text(change_text(item))),
        ]
        for item in items
    ]
    counts = ", ".join(f"{n} {g}" for g in TONES if (n := sum(1 for i in items if i["grade"] == g)))
    columns = [Column("Principle"), Column("Grade"), Column("Why", wrap=True), Column("Change", wrap=True)]
    return Table(columns, rows, caption=f"Methodology: {counts}", sortable=False)


def methodology_section(results: Results) -> Section | None:
    """None for a results document written before the checklist existed."""
    items = results.get("methodology") or []
    if not items:
        return None
    blocks: list[Block | Section] = [Para(INTRO), methodology_table(items)]
    return Section("Methodology", "methodology", blocks)
