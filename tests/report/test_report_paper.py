"""A seed paper's capacity table beside ours, from hand-made cells: each paper row finds the cells of
its factor value, our capacity (the mean of those that found one) and our limit in the paper's
words; a value no cell ran keeps the paper's figure with ours empty."""

from __future__ import annotations

from importlib import resources
from typing import Any, cast

import yaml

from caplab.report.model.paper import limit_kind, paper_comparison
from caplab.report.model.types import CellResult


def cell(index: int, setup: str, capacity: float | None, resource: str, kind: str = "hardware") -> CellResult:
    found = {"value": capacity, "found": capacity is not None}
    return cast(
        CellResult,
        {
            "index": index,
            "factors": {"setup": setup},
            "status": "complete",
            "metrics": {"capacity": found, "consistency": "good"},
            "limit": {"resource": resource, "kind": kind},
        },
    )


def test_the_paper_rows_carry_our_capacity_and_limit_beside_its_own() -> None:
    spec: dict[str, Any] = {
        "paper": {
            "source": "seed 002",
            "capacity": {"hdd": 3200, "ssd": 11000, "raid": 5300},
            "limit": {"hdd": "disk", "ssd": "cpu"},
        }
    }
    cells = [
        cell(0, "hdd", 30.0, "volume:data"),
        cell(1, "ssd", 500.0, "cpu:host"),
        cell(2, "ssd", 600.0, "cpu:host"),
    ]
    table = paper_comparison(spec, cells)
    assert table is not None and table["factor"] == "setup" and table["source"] == "seed 002"
    rows = {r["value"]: r for r in table["rows"]}
    assert rows["hdd"]["ours"] == 30.0 and rows["hdd"]["ours_kind"] == "disk" and rows["hdd"]["paper"] == 3200
    assert (
        rows["ssd"]["ours"] == 550.0
        and rows["ssd"]["cells"] == [1, 2]
        and rows["ssd"]["paper_limit"] == "cpu"
    )
    assert rows["raid"]["ours"] is None and rows["raid"]["cells"] == [] and rows["raid"]["paper"] == 5300
    assert paper_comparison({"paper": {"job": {}}}, cells) is None


def test_our_limits_in_the_papers_words() -> None:
    assert limit_kind("link:db", "hardware") == limit_kind("network round trips", "software") == "network"
    assert limit_kind("disk:sda", "hardware") == "disk" and limit_kind("software", "software") == "software"


def test_the_boxes_studys_second_box_is_the_papers_box_of_a_similar_cpu() -> None:
    """hl7-hardware/boxes.yaml puts the database on a second box of the same size: seed 002's like of
    it is SQL Server on an i7-4770K beside Connexion's i7-3770K, 15,000 msg/s with no limit named
    (its "?"), not the 4,800 it measured with the database on a smaller i3 530 (network-bound)."""
    study = yaml.safe_load((resources.files("caplab.studies") / "hl7-hardware" / "boxes.yaml").read_text())
    rows = {r["value"]: r for r in (paper_comparison(study, []) or {"rows": []})["rows"]}
    assert (rows["together"]["paper"], rows["together"]["paper_limit"]) == (11000, "cpu")
    assert (rows["apart"]["paper"], rows["apart"]["paper_limit"]) == (15000, None)
    assert "i7-4770K" in study["paper"]["source"] and "i3" not in study["paper"]["source"]
