"""The seed paper's consolidation figures found for the combined server's configuration: by the
paper's factor, by any factor value, or by the profile ``consolidation.together`` names; none when
the paper gives no figures for it."""

from __future__ import annotations

from typing import Any

from caplab.report.model.consolidation import paper_consolidation

FIGURES = {"4c-8g": {"cpu_predicted_percent": 53, "cpu_actual_percent": 53, "memory_actual_mb": 5069}}


def spec(**paper: Any) -> dict[str, Any]:
    return {
        "consolidation": {"together": "4c-8g"},
        "paper": {"source": "seed 003", "consolidation": FIGURES, **paper},
    }


def test_by_the_papers_factor_or_the_combined_servers_profile() -> None:
    by_factor = paper_consolidation(
        spec(factor="config"), {"factors": {"config": "4c-8g", "placement": "together"}}
    )
    assert by_factor == {
        "source": "seed 003",
        "configuration": "4c-8g",
        "cpu_predicted": 53.0,
        "cpu_actual": 53.0,
        "memory_predicted": None,
        "memory_actual": 5069.0,
    }
    by_profile = paper_consolidation(spec(), {"factors": {"placement": "together"}})
    assert by_profile is not None and by_profile["configuration"] == "4c-8g"


def test_none_without_figures_for_the_configuration() -> None:
    other = {"consolidation": {"together": "8c-16g"}, "paper": {"consolidation": FIGURES}}
    assert paper_consolidation(other, {"factors": {"placement": "together"}}) is None
    assert paper_consolidation({"paper": {"capacity": {}}}, {"factors": {}}) is None
