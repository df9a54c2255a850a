"""The Findings section: each claim of the study file, the paper's figure beside ours where the
file gives one (its hardware, not this machine), the verdict and the evidence behind it."""

from __future__ import annotations

from caplab import units as u
from caplab.report.layout.blocks import Block, Column, Para, Section, Table, TableCell, text_cell
from caplab.report.model.types import FindingEntry, Results

TONES = {"reproduced": "good", "contradicted": "bad", "inconclusive": "warn"}
INTRO = (
    "Each claim judged from this study's measurements with its 95 % intervals: reproduced when the "
    "whole interval agrees with it, contradicted when the whole interval disagrees, inconclusive when "
    "it straddles the line or the study did not measure what the claim needs."
)
PAPER = (
    "The paper's figures are from its own hardware, not this machine: compare the direction, not the size."
)


def evidence(f: FindingEntry) -> str:
    """What the verdict rests on, in one cell: its ratio, slope or share, else the cells' figures."""
    if f["estimates"]:
        return "; ".join(f"{e['name']} {e['text']}" for e in f["estimates"])
    return "; ".join(f"{x['label']}: {x['text']}" for x in f["figures"]) or u.DASH


def findings_table(findings: list[FindingEntry]) -> Table:
    papers = any(f["paper"] is not None for f in findings)
    columns = [
        Column("Claim", wrap=True),
        *([Column("Paper (its hardware)", wrap=True)] if papers else []),
        Column("Ours", wrap=True),
        Column("Verdict"),
        Column("Why", wrap=True),
    ]
    rows: list[list[TableCell]] = []
    for f in findings:
        paper = [text_cell(u.free_text(f["paper"]) if f["paper"] is not None else u.DASH)] if papers else []
        rows.append(
            [
                text_cell(u.free_text(f["claim"])),
                *paper,
                text_cell(evidence(f)),
                text_cell(f["verdict"], TONES[f["verdict"]]),
                text_cell(u.free_text(f["reason"])),
            ]
        )
    counts = ", ".join(f"{n} {v}" for v in TONES if (n := sum(1 for f in findings if f["verdict"] == v)))
    return Table(columns, rows, caption=f"Findings: {counts}", sortable=False)


def findings_section(results: Results) -> Section | None:
    """None when the study file states no findings."""
    findings = results.get("findings") or []
    if not findings:
        return None
    blocks: list[Block | Section] = [Para(INTRO), findings_table(findings)]
    if any(f["paper"] is not None for f in findings):
        blocks.append(Para(PAPER))
    return Section("Findings", "findings", blocks)
