"""The Recovery section's database-level part, from hand-made cells: the success rate with each
failure's reason, a row per failover trial, and recovery time against the database count fitted
only when there are enough counts to fit a shape to."""

from __future__ import annotations

from typing import Any, cast

from caplab.report.layout.failover import (
    database_recovery_table,
    phases_table,
    recovery_fit_lines,
    replication_table,
    success_table,
)
from caplab.report.layout.paper import paper_recovery_table
from caplab.report.layout.phase_chart import phases_chart
from caplab.report.model.cells import failover_row
from caplab.report.model.paper_recovery import paper_recovery
from caplab.report.model.types import Results


def failover(trial: int, databases: int, max_s: float, success: bool) -> dict[str, Any]:
    """A trial's ``failover`` entry as the runner stores it in the cell's metrics (``trial``: its
    0-based place in the cell)."""
    reasons = [] if success else ["1 database(s) never recovered: ag_3"]
    return {
        "trial": trial,
        "action": "switchover",
        "recovery": {
            "databases": [{"database": f"ag_{k}"} for k in range(databases)],
            "group_s": 0.8,
            "p50_s": max_s / 2,
            "p95_s": max_s * 0.9,
            "max_s": max_s,
            "not_recovered": [] if success else ["ag_3"],
            "failed": 40,
            "resolution_s": 0.1,
        },
        "verdict": {"success": success, "reasons": reasons},
    }


def results(sizes: list[int]) -> Results:
    cells = []
    for index, n in enumerate(sizes):
        entries = [failover(0, n, 0.01 * n, True), failover(1, n, 0.012 * n, index != 0)]
        failures = [{"trial": "1", "reasons": entries[1]["verdict"]["reasons"]}] if index == 0 else []
        cells.append(
            {
                "index": index,
                "factors": {"databases": n},
                "failover": [failover_row(e) for e in entries],
                "success": {
                    "successes": 2 - len(failures),
                    "trials": 2,
                    "text": f"{2 - len(failures)}/2",
                    "failures": failures,
                },
            }
        )
    return cast(
        Results, {"cells": cells, "matrix": {"factors": {"databases": sizes}, "naming": ["databases"]}}
    )


def test_the_success_rate_names_each_failure() -> None:
    table = success_table(results([50, 100]))
    assert table is not None
    first = [c.text for c in table.rows[0]]
    assert first[2] == "1/2" and "trial 2: 1 database(s) never recovered: ag_3" in first[3]
    assert table.rows[1][2].text == "2/2"


def test_each_failover_trial_is_a_row_with_its_spread_and_verdict() -> None:
    table = database_recovery_table(results([50]))
    assert table is not None and len(table.rows) == 2
    row = {col.title: cell.text for col, cell in zip(table.columns, table.rows[1], strict=True)}
    assert row["trial"] == "2", "stored 0-based, shown from 1 as the Recovery table does"
    assert row["databases"] == "50" and row["max"] == "0.60" and row["never back"] == "1"
    assert "never recovered" in row["verdict"]
    assert table.note is not None and "(± 0.1 s, the interval series' resolution)" in table.note


def test_databases_probed_more_slowly_give_the_note_a_range_of_resolutions() -> None:
    probed = results([50, 400])
    for entry in probed["cells"][1]["failover"]:
        entry["resolution_s"] = 0.8  # 1.25 probes a second per database
    table = database_recovery_table(probed)
    assert table is not None and table.note is not None
    assert "(± 0.1–0.8 s: the interval series' resolution, or a database's gap" in table.note


def test_recovery_growing_with_the_database_count_is_fitted_not_eyeballed() -> None:
    lines = recovery_fit_lines(results([50, 100, 200, 400]))
    assert lines[0].startswith("Database level (the last database back): recovery time grows")
    assert "fit time ≈" in lines[0] and "R² 0.98" in lines[0] and "Against the trend" not in lines[0]
    assert lines[1].startswith("Group level (a primary writable): recovery time stays flat")


def test_too_few_database_counts_are_said_to_be_too_few() -> None:
    [db, group] = recovery_fit_lines(results([20]))
    assert "measured at 20 databases; a shape against the database count needs 3 counts" in db
    assert group.startswith("Group level")


def test_replication_is_shown_per_node_with_write_flush_and_replay_lag() -> None:
    shown = results([20])
    primary = {"primary": 1.0, "wal_mb_s": 2.5, "send_lag_mb": 0.01, "replay_lag_mb": 0.02}
    lags = {"write_lag_ms": 0.42, "flush_lag_ms": 0.9, "replay_lag_ms": 1.7}
    standby = {"primary": 0.0, "replay_mb_s": 2.4, "receive_lag_mb": 0.0}
    cell = cast(dict[str, Any], shown["cells"][0])
    cell["recovery"] = []
    cell["resources"] = {"pg:127.0.0.1:7600": primary | lags, "pg:127.0.0.1:7601": standby, "host": {}}
    table = replication_table(shown)
    assert table is not None and len(table.rows) == 2
    rows = [{col.title: c.text for col, c in zip(table.columns, row, strict=True)} for row in table.rows]
    assert rows[0]["node"] == "127.0.0.1:7600" and rows[0]["primary"] == "100%"
    assert (rows[0]["write lag"], rows[0]["flush lag"], rows[0]["replay lag"]) == ("0.42", "0.9", "1.7")
    assert rows[1]["redo"] == "2.4" and rows[1]["write lag"] == "—"
    cell["failover"] = []
    mirrored = replication_table(shown)
    assert mirrored is not None and len(mirrored.rows) == 2, "a mirrored pair under load alone: shown too"
    cell["resources"] = {"pg:127.0.0.1:7600": {"commits_s": 120.0}, "host": {}}
    assert replication_table(shown) is None, "a database without a standby has no replication figures"


def test_a_failover_with_its_managers_phases_is_a_row_of_phases_after_the_fault() -> None:
    entry = failover(0, 4, 4.7, True) | {
        "phases": {
            "fault_s": 2.3,
            "detected_s": 4.30,
            "elected_s": 4.37,
            "promoted_s": 4.52,
            "writable_s": 4.54,
            "first_commit_s": 4.60,
            "last_commit_s": 4.70,
            "load_back_s": 4.80,
            "resolution_s": 0.02,
            "series_resolution_s": 0.1,
            "set_by": {"detected": "Patroni's ttl (5 s)"},
        }
    }
    done = results([4])
    done["cells"][0]["failover"] = [failover_row(entry), failover_row(failover(1, 4, 4.0, True))]
    table = phases_table(done)
    assert table is not None and len(table.rows) == 1, "a failover without phases has no row"
    row = {col.title: cell.text for col, cell in zip(table.columns, table.rows[0], strict=True)}
    shown = (row["detected"], row["writable"], row["first commit"], row["load back"])
    assert shown == ("4.30", "4.54", "4.60", "4.80")
    assert row["reconnect"] == "0.06"
    assert table.note is not None and "± 0.02 s" in table.note and "± 0.1 s" in table.note
    # The same failover on the timeline: a mark per phase at its seconds after the fault, on row 1.
    chart = phases_chart(done)
    assert chart is not None
    marks = {s.name: (list(s.x), list(s.y)) for s in chart.panels[0].series}
    assert list(marks) == [
        "detected",
        "elected",
        "promoted",
        "writable",
        "first commit",
        "last database",
        "load back",
    ]
    assert marks["detected"] == ([4.30], [1.0]) and marks["load back"] == ([4.80], [1.0])
    done["cells"][0]["failover"] = [failover_row(failover(1, 4, 4.0, True))]
    assert phases_chart(done) is None, "no failover reported its phases: no timeline"


def test_the_papers_recovery_times_stand_beside_ours_from_the_cells_it_names() -> None:
    done = results([50, 100])
    for cell in done["cells"]:
        cell["factors"]["traffic"] = "0%"
    loaded = cast(dict[str, Any], dict(done["cells"][1]))
    loaded["factors"] = {"databases": 100, "traffic": "10%"}
    loaded["failover"] = [failover_row(failover(0, 100, 99.0, True))]  # not the paper's condition
    done["cells"].append(cast(Any, loaded))
    spec = {
        "paper": {
            "source": "seed 004, its hardware",
            "cells": {"traffic": "0%"},
            "databases": {50: 200, 100: 400},
            "recovery": {"switchover": {50: [0.8, 2], 100: [1, 35]}, "kill-primary": {50: [0.8, 5]}},
        }
    }
    done["paper_recovery"] = paper_recovery(spec, done["cells"])
    table = paper_recovery_table(done)
    assert table is not None and len(table.rows) == 3
    rows = [[c.text for c in row] for row in table.rows]
    # ours: the median of the two trials' last database (0.01 × n and 0.012 × n), never the 10 % cell
    assert rows[0] == ["switchover", "50", "0.8", "0.6", "2", "200", "0.8", "2.0"]
    assert rows[1] == ["switchover", "100", "0.8", "1.1", "2", "400", "1.0", "35.0"]
    assert rows[2][:5] == ["kill-primary", "50", "—", "—", "0"], "no trial of ours: shown as none"
    assert table.note is not None and "seed 004, its hardware" in table.note and "traffic 0%" in table.note
    assert paper_recovery({"paper": {"capacity": {}}}, done["cells"]) is None
