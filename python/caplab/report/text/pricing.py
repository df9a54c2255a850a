"""results.json's top-level ``cost`` and ``endurance``: what each rated configuration costs against
what it carries, and how long each configuration's rated drives last at the rate it wrote them —
for load and job studies alike, with or without a goal (the recommendation keeps its own copy of
the chosen configuration's)."""

from __future__ import annotations

from caplab.report.model.types import CellEndurance, CellResult, Recommendation, StudyCost
from caplab.report.model.wear import endurance_rows


def study_cost(rec: Recommendation) -> StudyCost | None:
    """The recommendation's cost summary with every rated configuration's price (None unpriced)."""
    summary = rec.get("cost")
    if not summary:
        return None
    return {
        **summary,
        "configurations": [
            {
                "cell": r["cell"],
                "label": r["label"],
                "cost": r.get("cost"),
                "rate": r["rate"],
                "unit": r["unit"],
                "cost_per_1000": r.get("cost_per_1000"),
                "cost_per_item_s": r.get("cost_per_item_s"),
            }
            for r in rec["ratings"]
        ],
    }


def study_endurance(cells: list[CellResult], rec: Recommendation) -> list[CellEndurance]:
    """Each configuration with rated volumes, marked ``chosen`` when the recommendation chose it (or,
    without a goal, when it is the cheapest per unit of capacity)."""
    chosen = {c["cell"] for c in rec["choices"]}
    summary = rec.get("cost")
    cheapest = summary["cheapest"] if summary else None
    if not chosen and cheapest:
        chosen = {cheapest["cell"]}
    return [
        {"cell": c["index"], "label": c["label"], "chosen": c["index"] in chosen, "volumes": rows}
        for c in cells
        if (rows := endurance_rows(c))
    ]
