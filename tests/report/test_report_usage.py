"""A usage profile's results at capacity in the report, from hand-made cells: the stored search's
actions and per_user become the model's rows, then the table of each action's rate, errors and
p50/p90/p99 and the table of actions per user-hour offered and reached, rendered in Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from caplab.report.layout.blocks import Report, Section, Table
from caplab.report.layout.usage import actions_table, cpu_per_user_table, per_user_table
from caplab.report.model.cells import _capacity
from caplab.report.model.types import CellResult, Results
from caplab.report.render.markdown import render_markdown
from caplab.store.document import CellMetrics

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
                "metrics": {"capacity": _capacity(CellMetrics({"capacity": s}))},
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
    assert _capacity(CellMetrics({"capacity": plain})) is not None


def test_the_tables_render_in_markdown() -> None:
    tables = [t for t in (actions_table(results(STORED)), per_user_table(results(STORED))) if t]
    report = Report("role-consolidation", "", [Section("Capacity", "capacity", list(tables))])
    text = render_markdown(report, lambda chart: Path(chart.id), "now")
    assert (
        "Actions at capacity" in text and "Actions per user" in text and "| send |" in text.replace("  ", " ")
    )


def test_cpu_per_user_compares_each_roles_cpu_per_thousand_users_with_the_first_cell() -> None:
    """The seed's 46 → 108 KB messages: 70 → 90 % CPU at the same users. Here the heavier cell runs
    twice the users, so the ratio of CPU per user, not of CPU, is the comparison: transport
    30 % / 500 users = 60 % per 1,000 and access 10 % → 20 %, together 80; then 96 % and 64 % over
    1,000 users = 96 + 64 = 160 per 1,000, twice the first. A cell that ran no users is left out."""

    def cell(i: int, label: str, users: int | None, transport: float, access: float) -> CellResult:
        resources = {"transport": {"cpu_percent": transport}, "access": {"cpu_percent": access}, "host": {}}
        return cast(
            CellResult,
            {
                "index": i,
                "label": label,
                "status": "complete",
                "roles": ["transport", "access"],
                "metrics": {"users": users, "throughput": 10.0},
                "resources": resources,
            },
        )

    base, heavy = cell(0, "mix=base", 500, 30.0, 10.0), cell(1, "mix=108k", 1000, 96.0, 64.0)
    shown = cast(Results, {"cells": [base, cell(2, "rate", None, 50.0, 5.0), heavy]})
    table = cpu_per_user_table(shown)
    assert table is not None and [c.title for c in table.columns][3:] == [
        "transport",
        "access",
        "all roles",
        "against the first",
    ]
    rows = [[c.text for c in row] for row in table.rows]
    assert rows == [
        ["mix=base", "500", "10/s", "60%", "20%", "80%", "1.00"],
        ["mix=108k", "1,000", "10/s", "96%", "64%", "160%", "2.00"],
    ]
    assert cpu_per_user_table(cast(Results, {"cells": [base]})) is None, "one cell: nothing to compare"
    # The paper's tests 1b and 1c: 70 % at 7,800 users, then 90 % at 7,800 with 108 KB messages.
    paper_rows = [
        {"value": "base", "paper": 7800.0, "paper_cpu_percent": 70.0},
        {"value": "108k", "paper": 7800.0, "paper_cpu_percent": 90.0},
    ]
    base["factors"] = {"mix": "base"}
    heavy["factors"] = {"mix": "108k"}
    paper = {"source": "seed 003", "factor": "mix", "rows": paper_rows, "recommendation": None}
    beside = cpu_per_user_table(cast(Results, {"cells": [base, heavy], "paper": paper}))
    assert beside is not None and [c.title for c in beside.columns][-2:] == ["paper", "paper's ratio"]
    assert [[c.text for c in row][-2:] for row in beside.rows] == [["9.0%", "1.00"], ["12%", "1.29"]]
    assert "seed 003" in beside.note


def test_cpu_per_user_sums_the_servers_under_test_not_the_mailbox_beside_them() -> None:
    """The paper's CPU is its combined server's (client access and transport), its mailbox servers
    apart: the roles on a hardware profile are summed, the unconstrained mailbox shown but not."""

    def cell(i: int, users: int, transport: float, access: float, mailbox: float) -> CellResult:
        quota = {"quota_cpus": 0.25}
        resources = {
            "transport": {"cpu_percent": transport, **quota},
            "access": {"cpu_percent": access, **quota},
            "mailbox": {"cpu_percent": mailbox},
        }
        return cast(
            CellResult,
            {
                "index": i,
                "label": f"test={i}",
                "status": "complete",
                "roles": ["transport", "access", "mailbox"],
                "metrics": {"users": users, "throughput": 10.0},
                "resources": resources,
            },
        )

    table = cpu_per_user_table(
        cast(Results, {"cells": [cell(0, 1000, 13.0, 1.0, 10.0), cell(1, 1000, 21.0, 5.0, 30.0)]})
    )
    assert table is not None and [c.title for c in table.columns][3:] == [
        "transport",
        "access",
        "mailbox",
        "transport+access",
        "against the first",
    ]
    assert [[c.text for c in row][-2:] for row in table.rows] == [["14%", "1.00"], ["26%", "1.86"]]
    assert "the roles on a hardware profile" in table.note


MAIL_STUDY = """\
name: users
target:
  mail:
    smtp: smtp://127.0.0.1:2587
    imap: imaps://127.0.0.1:2993
    message_size: 47104
load:
  usage:
    actions:
      send: {per_hour: 16, target: smtp}
      read: {per_hour: "{reads}", target: imap}
search: {slo: ["cpu[transport]<=75%"], start: 500}
"""


def test_a_mail_usage_study_is_stated_as_users_doing_their_actions() -> None:
    """The scenario of a study of mail users: the SMTP and IMAP targets, the message size, and a
    closed load of users doing the profile's actions — not an open rate the search varies."""
    from caplab.report.layout.sections import scenario as scenario_section
    from caplab.report.model.scenario import parse_spec, scenario

    s = scenario(parse_spec(MAIL_STUDY))
    assert s["model"] == "closed"
    assert s["target"] == {
        "protocol": "smtp and imaps",
        "url": "smtp://127.0.0.1:2587 · imaps://127.0.0.1:2993",
        "method": None,
        "framing": None,
        "body": "messages of 47104 bytes",
    }
    assert s["usage"] == "send 16 an hour, read {reads} an hour"
    section = scenario_section(cast(Results, {"scenario": s}))
    rendered = render_markdown(Report("t", "t", [section]), lambda c: Path(c.id), "now")
    assert (
        "closed: the number of users the search varies, each doing send 16 an hour, read {reads} an "
        "hour" in rendered
    )
