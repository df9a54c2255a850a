"""The table `caplab run` prints at the end: what varies, each cell's capacity and limit, and no
line an 80-column terminal has to cut."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from caplab.cli.progress import replicates_line, summary_table


def cell(index: int, hosts: int, throughput: float | None, found: bool = True) -> dict[str, Any]:
    metrics: dict[str, Any] = {"capacity": {"found": found, "message": "confirmation trials kept failing"}}
    if throughput is not None:
        metrics |= {"throughput": throughput, "latency_ms": {"p99": 12.5}, "errors": 0}
        metrics["limit"] = {"resource": "cpu:processing" if hosts == 1 else "cpu:host"}
    roles = ("receive", "processing", "messagebox", "sink")
    resources = {r: {"cpu_percent": 10.0 * (k + 1)} for k, r in enumerate(roles)}
    resources |= {"host": {"cpu_percent": 190.0}, "generator": {"cpu_percent": 20.0}, "app": {"x": 1.0}}
    factors = {"scenario": "orchestration", "stores": 4, "hosts": hosts}
    return {
        "index": index,
        "factors": factors,
        "status": "complete",
        "metrics": metrics,
        "resources": resources,
    }


def render(cells: list[dict[str, Any]], width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(summary_table({"study": {"id": 7, "name": "scale"}, "cells": cells}, console))
    return console.export_text()


def test_factors_held_at_one_value_go_in_the_title_and_each_row_names_its_limit() -> None:
    text = render([cell(0, 1, 1199.0), cell(1, 2, 1797.0)], 80)
    assert "study 7: scale (scenario=orchestration stores=4)" in text
    rows = [line for line in text.splitlines() if "cpu:" in line]
    assert len(rows) == 2 and "1,199" in rows[0] and "cpu:processing" in rows[0] and "1,797" in rows[1]
    assert "receive" in text, "the roles fit"
    assert "every cell complete" in text and "status" not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_search_that_found_nothing_is_not_shown_as_complete() -> None:
    text = render([cell(0, 1, None, found=False), cell(1, 2, 1797.0)], 80)
    assert "no capacity" in text
    assert "every cell complete" not in text


def test_a_narrow_console_drops_the_roles_not_the_limits() -> None:
    many = [cell(i, h, 1000.0 + i) for i, h in enumerate([1, 2, 3, 4])]
    for c in many:
        c["factors"]["scenario"] = "orchestration" if c["index"] % 2 else "messaging"
        c["factors"]["stores"] = 1 + 3 * (c["index"] // 2)
    text = render(many, 60)
    assert "receive" not in text and "CPU per role:" in text
    assert all(f"1,00{i}" in text for i in range(4))
    assert max(len(line) for line in text.splitlines()) <= 60


def test_a_failed_cell_is_counted_and_no_error_free_claim_is_made() -> None:
    failed = {**cell(1, 2, None), "status": "failed", "metrics": {}}
    text = render([cell(0, 1, 1199.0), failed], 120)
    assert "1 of 2 cells failed" in text
    assert "no errors in any cell" not in text
    assert "no errors in any cell" in render([cell(0, 1, 1199.0), cell(1, 2, 1797.0)], 120)


def test_a_role_on_a_profile_shows_its_cpu_against_the_profile_not_one_host_core() -> None:
    on_profile = cell(0, 1, 325.0)
    on_profile["resources"]["processing"] |= {"cpu_percent": 24.6, "quota_cpus": 0.25}
    text = render([on_profile, cell(1, 2, 649.0)], 120)
    row = next(line for line in text.splitlines() if "325" in line)
    # receive 10 (no profile), processing 24.6 % of a core over a 0.25-CPU quota = 98 % of its profile
    assert row.split()[-5:] == ["30", "98", "10", "40", "190"], row  # messagebox processing receive sink host
    assert "cpu % of its profile's quota" in " ".join(text.split())
    assert "profile" not in render([cell(0, 1, 325.0)], 120)


def test_capacities_from_one_search_say_their_intervals_are_brackets() -> None:
    one = [cell(0, 1, 1199.0), cell(1, 2, 1797.0)]
    assert "from 1 replicate" in str(replicates_line({"cells": one}))
    assert "search's bracket, not a confidence interval" in str(replicates_line({"cells": one}))
    three = [cell(0, 1, 1199.0), cell(1, 2, 1797.0)]
    for c in three:
        c["metrics"]["capacity"]["replicate_count"] = 3
    assert replicates_line({"cells": three}) == (
        "capacities: the mean of 3 replicates each (fresh SUT start each), 95% t-interval over them"
    )
    assert replicates_line({"cells": [cell(0, 1, None, found=False)]}) is None
