"""The seed paper's figures in the role-consolidation report: its consolidation figures found for the
combined server's configuration (by the paper's factor, by any factor value, or by the profile
``consolidation.together`` names; none when the paper gives none for it), and the built-in study's
paper block beside our users, labelled as its hardware."""

from __future__ import annotations

from importlib import resources
from typing import Any, cast

import yaml

from caplab.report.layout.paper import paper_table
from caplab.report.model.consolidation import paper_consolidation
from caplab.report.model.paper import paper_comparison
from caplab.report.model.types import CellResult, Results

FIGURES = {"4c-8g": {"cpu_predicted_percent": 53, "cpu_actual_percent": 53, "memory_actual_mb": 5069}}


def spec(**paper: Any) -> dict[str, Any]:
    return {
        "consolidation": {"together": "4c-8g"},
        "paper": {"source": "seed 003", "consolidation": FIGURES, **paper},
    }


def test_by_the_papers_factor_or_the_combined_servers_profile() -> None:
    by_factor = paper_consolidation(spec(factor="config"), {"config": "4c-8g", "placement": "together"})
    assert by_factor == {
        "source": "seed 003",
        "configuration": "4c-8g",
        "cpu_predicted": 53.0,
        "cpu_actual": 53.0,
        "memory_predicted": None,
        "memory_actual": 5069.0,
    }
    by_profile = paper_consolidation(spec(), {"placement": "together"})
    assert by_profile is not None and by_profile["configuration"] == "4c-8g"


def test_none_without_figures_for_the_configuration() -> None:
    other = {"consolidation": {"together": "8c-16g"}, "paper": {"consolidation": FIGURES}}
    assert paper_consolidation(other, {"placement": "together"}) is None
    assert paper_consolidation({"paper": {"capacity": {}}}, {}) is None


def searched(index: int, placement: str, users: int, limit: str, consistency: str) -> CellResult:
    """A 2c/4G cell of ours at that placement, its users found by a search."""
    return cast(
        CellResult,
        {
            "index": index,
            "factors": {"config": "2c-4g", "placement": placement},
            "metrics": {"capacity": {"value": users, "found": True}, "consistency": consistency},
            "limit": {"resource": limit, "kind": "hardware"},
        },
    )


def test_the_role_consolidation_studys_paper_block_renders_beside_our_users() -> None:
    """study.yaml's paper: its users per configuration, CPU and messages/s and its recommendation,
    labelled as its hardware beside a cell of ours (capacities in users)."""
    study = yaml.safe_load(
        (resources.files("caplab.studies") / "role-consolidation" / "study.yaml").read_text()
    )
    ours = searched(0, "together", 70, "cpu:host", "fair")
    # The same configuration's single-role servers carried more users apart: the paper's figure
    # is its combined server's, so ours beside it is together's alone, not the mean of both.
    apart = searched(1, "apart", 90, "cpu:transport", "good")
    comparison = paper_comparison(study, [apart, ours])
    assert comparison is not None and comparison["factor"] == "config"
    assert comparison["rows"][0]["ours_limit"] == "cpu:host" and comparison["rows"][0]["cells"] == [0]
    rows = {r["value"]: r for r in comparison["rows"]}
    assert (rows["2c-4g"]["ours"], rows["2c-4g"]["paper"], rows["2c-4g"]["paper_cpu_percent"]) == (
        70,
        3060,
        77,
    )
    assert rows["8c-16g-1c"]["paper_rate"] == 38 and rows["8c-16g"]["ours"] is None
    results = cast(Results, {"paper": comparison, "capacity": [{"unit": "users"}]})
    table = paper_table(results)
    assert table is not None
    titles = [(c.title, c.unit) for c in table.columns]
    assert ("ours", "users, this machine") in titles and ("paper", "users, its hardware") in titles
    assert ("paper's CPU", "its hardware") in titles and ("paper's messages", "its hardware") in titles
    first = [c.text for c in table.rows[0]]
    assert first[:2] == ["2c-4g", "70"] and first[5:] == ["3,060", "cpu", "77%", "14/s"]
    assert (
        "the paper's hardware, not this machine" in table.note and "recommends 8 cores, 12 GB" in table.note
    )


def test_the_8_core_12_gb_figures_are_one_row_of_the_papers_test_2c() -> None:
    """Seed 003 ran 8c/12G in test 2c only: test 2b's load, 16,848 users at 58 % CPU and 41 messages/s,
    and an increased load, 18,269 users at 70 % and 42. The study's users, CPU and messages for it
    are one of those rows — never test 1a's 9,800 users (the 8c/16G's, another client mix) beside
    test 2c's CPU."""
    paper = yaml.safe_load(
        (resources.files("caplab.studies") / "role-consolidation" / "study.yaml").read_text()
    )["paper"]
    config = "8c-12g"
    figures = (paper["capacity"][config], paper["cpu_percent"][config], paper["messages_per_s"][config])
    assert figures in {(16848, 58, 41), (18269, 70, 42)}, figures
    assert "16,848 users, at 58 %" in paper["recommendation"] and "18,269 users" in paper["recommendation"]
