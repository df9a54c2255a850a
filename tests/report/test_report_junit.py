"""A stored study's verdicts as a CI gate's JUnit cases (`caplab run --junit`): the report
fixture's two studies — a capacity search per cell, and fixed loads with a cell whose SUT fails —
and a goal met or not."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import cast
from xml.dom import minidom

from caplab.report.junit import gate_failed, study_cases, write_junit
from caplab.report.model.types import Results
from support.reports import Built


def test_a_searched_cell_gates_on_its_capacity_and_writes_failed_probes_as_skipped(
    built: Built, tmp_path: Path
) -> None:
    results = cast(Results, built.scaleout.results)
    cases = study_cases(results)
    assert not gate_failed(cases)
    for cell in results["cells"]:
        mine = [c for c in cases if c.suite == f"cell {cell['index']} {cell['label']}"]
        capacity = cell["metrics"]["capacity"]
        assert capacity is not None and capacity["found"]
        assert mine[0].name == "capacity" and mine[0].passed
        assert mine[0].reason == f"capacity {capacity['value']:g} {capacity['unit']}"
        search = cell["search"]
        assert search is not None
        assert len(mine) == 1 + len(search["trials"])
        assert all(c.probe for c in mine[1:])
    doc = minidom.parse(str(write_junit(tmp_path / "gate.xml", "scaleout", cases)))
    skipped = len(doc.getElementsByTagName("skipped"))
    assert skipped == sum(not c.passed for c in cases) > 0  # a search fails probes above capacity
    assert doc.getElementsByTagName("testsuites")[0].getAttribute("failures") == "0"


def test_a_failed_cell_fails_the_gate_with_its_error(built: Built) -> None:
    results = cast(Results, built.fixed.results)
    cases = study_cases(results)
    assert gate_failed(cases)
    failed = [c for c in cases if not c.passed]
    broken = [c for c in results["cells"] if c["status"] == "failed"]
    assert [c.suite for c in failed] == [f"cell {c['index']} {c['label']}" for c in broken]
    assert failed[0].reason == broken[0]["error"]


def test_the_goal_is_a_case_that_fails_when_no_configuration_carries_it(built: Built) -> None:
    results = cast(Results, copy.deepcopy(built.scaleout.results))
    results["goal"] = {"rate": 100.0, "headroom": 0.25, "for_each": []}
    results["recommendation"]["choice"] = None
    unmet = study_cases(results)[-1]
    assert (unmet.suite, unmet.name, unmet.passed) == ("goal", "goal 100 req/s with 25% headroom", False)
    assert gate_failed(study_cases(results))
    results["recommendation"]["choice"] = copy.deepcopy(built.scaleout.results)["recommendation"]["ratings"][
        0
    ]
    assert study_cases(results)[-1].passed


def finding(claim: str, verdict: str, reason: str) -> dict[str, object]:
    return {"claim": claim, "paper": None, "kind": "compare", "verdict": verdict, "reason": reason,
            "figures": [], "estimates": []}  # fmt: skip


def test_a_contradicted_finding_fails_the_gate_and_an_inconclusive_one_is_skipped(tmp_path: Path) -> None:
    results = cast(
        Results,
        {
            "cells": [],
            "goal": None,
            "findings": [
                finding("SSD beats HDD", "reproduced", "ratio 3.1 [2.8, 3.4] > 1"),
                finding(
                    "Two hosts double capacity", "contradicted", "ratio 1.2 [1.1, 1.3] outside [1.8, 2.2]"
                ),
                finding("Memory never binds", "inconclusive", "cell 2's limit was not named"),
            ],
        },
    )
    cases = study_cases(results)
    assert [(c.suite, c.name, c.passed, c.probe) for c in cases] == [
        ("findings", "SSD beats HDD", True, False),
        ("findings", "Two hosts double capacity", False, False),
        ("findings", "Memory never binds", False, True),
    ]
    assert cases[1].reason == "contradicted: ratio 1.2 [1.1, 1.3] outside [1.8, 2.2]"
    assert gate_failed(cases)
    doc = minidom.parse(str(write_junit(tmp_path / "gate.xml", "study", cases)))
    [failure] = doc.getElementsByTagName("failure")
    assert failure.getAttribute("message").startswith("contradicted: ")
    [skipped] = doc.getElementsByTagName("skipped")
    assert skipped.getAttribute("message") == "inconclusive: cell 2's limit was not named"
    assert not gate_failed([cases[0], cases[2]]), "an inconclusive finding gates nothing"
