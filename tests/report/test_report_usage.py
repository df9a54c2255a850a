"""A usage profile's results at capacity in the report, from hand-made cells: the stored search's
actions and per_user become the model's rows, then the table of each action's rate, errors and
p50/p90/p99 and the table of actions per user-hour offered and reached, rendered in Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from caplab.report.layout.blocks import Report, Section, Table
from caplab.report.layout.usage import actions_table, per_user_table
from caplab.report.model.cells import _capacity
from caplab.report.model.types import CellResult, Results
from caplab.report.render.markdown import render_markdown

STORED = {  # a cell's capacity as the search stores it (CapacityAnswer.to_dict, less limit and trials)
    "model": "closed",
    "found": True,
    "capacity_users": 68,
    "capacity_rps": 19.0,
    "actions": [
        {
            "name": "send",
            "completed": 28,
            "errors": 2,
            "per_s": 4.67,
            "p50_ms": 32.7,
            "p90_ms": 75.5,
            "p95_ms": 80.1,
            "p99_ms": None,
        },
        {
            "name": "read",
            "completed": 86,
            "errors": 0,
            "per_s": 14.3,
            "p50_ms": 3.5,
            "p90_ms": 6.2,
            "p99_ms": 9.0,
        },
    ],
    "per_user": {
        "offered_per_s": 0.311,
        "offered_per_hour": 1120.0,
        "achieved_per_s": 0.279,
        "achieved_per_hour": 1005.9,
    },
}


def results(*stored: dict[str, Any]) -> Results:
    cells = [
        cast(
            CellResult,
            {
                "index": i,
                "factors": {"placement": f"p{i}"},
                "metrics": {"capacity": _capacity({"capacity": s})},
            },
        )
        for i, s in enumerate(stored)
    ]
    capacity = [{"cell": i, "label": f"placement=p{i}"} for i in range(len(stored))]
    return cast(Results, {"cells": cells, "capacity": capacity})


def texts(table: Table) -> list[list[str]]:
    return [[c.text for c in row] for row in table.rows]


def test_each_action_at_capacity_has_its_rate_errors_and_percentiles() -> None:
    table = actions_table(results(STORED))
    assert table is not None
    assert [c.title for c in table.columns][-4:] == ["p50", "p90", "p95", "p99"]
    send, read = texts(table)
    assert send == ["placement=p0", "send", "4.67/s", "28", "2", "6.7%", "32.70ms", "75.50ms", "80.10ms", "–"]
    assert read[:3] == ["placement=p0", "read", "14.3/s"] and read[-1] == "9.00ms"
    assert read[-2] == "–", "an action stored before p95 was measured has none"
    assert table.rows[0][4].tone == "bad" and table.rows[1][4].tone == ""


def test_actions_per_user_hour_offered_against_reached() -> None:
    table = per_user_table(results(STORED))
    assert table is not None
    assert texts(table) == [["placement=p0", "1,120", "1,006", "90%"]]
    assert table.note.endswith("The lowest share reached: 90% (placement=p0).")


def test_a_study_without_a_usage_profile_gets_neither_table() -> None:
    plain = {"model": "open", "found": True, "capacity_rps": 500.0}
    assert actions_table(results(plain)) is None and per_user_table(results(plain)) is None
    assert _capacity({"capacity": plain}) is not None


def test_the_tables_render_in_markdown() -> None:
    tables = [t for t in (actions_table(results(STORED)), per_user_table(results(STORED))) if t]
    report = Report("role-consolidation", "", [Section("Capacity", "capacity", list(tables))])
    text = render_markdown(report, lambda chart: Path(chart.id), "now")
    assert (
        "Actions at capacity" in text and "Actions per user" in text and "| send |" in text.replace("  ", " ")
    )
