"""SLO verdicts as a JUnit XML file: the format every CI system reads (GitHub Actions, GitLab,
Jenkins), one test case per verdict, a failed SLO a failed case with its reason — as k6's
thresholds are read in a pipeline. A study's findings are cases too: a contradicted claim fails
the build ("the new release carries no fewer users than the last"), an inconclusive one is
skipped with its reason, as the data could not decide it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from caplab.report.model.types import CellResult, FindingEntry, Results


@dataclass(frozen=True)
class GateCase:
    """One verdict: ``suite`` groups the cases of one trial or cell (``load``, ``cell 2 trial 3``)."""

    suite: str
    name: str
    passed: bool
    reason: str
    seconds: float = 0.0
    probe: bool = False
    """A capacity search's probe: it fails where the load is above the capacity, which is how a
    search finds it, so a failed probe is written as skipped (with its reasons), not failed. An
    inconclusive finding is written the same way: neither held nor broken."""


def write_junit(path: Path, name: str, cases: list[GateCase]) -> Path:
    """Writes ``cases`` under one ``<testsuites name=…>``, a ``<testsuite>`` per suite in order."""
    root = ET.Element("testsuites", name=name, tests=str(len(cases)), failures=str(_failed(cases)))
    suites: dict[str, ET.Element] = {}
    for case in cases:
        suite = suites.get(case.suite)
        if suite is None:
            suite = ET.SubElement(root, "testsuite", name=case.suite)
            suites[case.suite] = suite
        element = ET.SubElement(
            suite, "testcase", classname=f"{name}.{case.suite}", name=case.name, time=f"{case.seconds:.3f}"
        )
        if case.passed:
            ET.SubElement(element, "system-out").text = case.reason
        elif case.probe:
            ET.SubElement(element, "skipped", message=case.reason)
        else:
            ET.SubElement(element, "failure", message=case.reason, type="slo")
    for suite_name, suite in suites.items():
        mine = [c for c in cases if c.suite == suite_name]
        suite.set("tests", str(len(mine)))
        suite.set("failures", str(_failed(mine)))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _failed(cases: list[GateCase]) -> int:
    return sum(not c.passed and not c.probe for c in cases)


def gate_failed(cases: list[GateCase]) -> bool:
    """Whether a case that gates failed (a search's probes never do)."""
    return _failed(cases) > 0


def study_cases(results: Results) -> list[GateCase]:
    """A study's verdicts: per cell, its capacity (found, or why not) and each trial (a search's
    probes as probes), a failed cell with its error; then each finding, and the goal when the
    study has one."""
    cases = [case for cell in results["cells"] for case in _cell_cases(cell)]
    cases += [_finding_case(f) for f in results["findings"]]
    goal = results["goal"]
    if goal is not None:
        choice = results["recommendation"]["choice"]
        name = f"goal {goal['rate']:g} {goal.get('unit', 'req/s')} with {goal['headroom']:.0%} headroom"
        cases.append(GateCase("goal", name, choice is not None, results["recommendation"]["text"]))
    return cases


def _finding_case(finding: FindingEntry) -> GateCase:
    verdict = finding["verdict"]
    return GateCase(
        "findings",
        finding["claim"],
        verdict == "reproduced",
        f"{verdict}: {finding['reason']}",
        probe=verdict == "inconclusive",
    )


def _cell_cases(cell: CellResult) -> list[GateCase]:
    suite = f"cell {cell['index']} {cell['label']}".strip()
    if cell["status"] == "failed":
        return [GateCase(suite, "cell", False, cell["error"] or "the cell failed")]
    cases: list[GateCase] = []
    capacity = cell["metrics"]["capacity"]
    if cell["searched"] and capacity is not None:
        found = f"capacity {capacity['value']:g} {capacity['unit']}" if capacity["found"] else ""
        cases.append(
            GateCase(suite, "capacity", capacity["found"], found or capacity["message"] or "not found")
        )
    search = cell["search"]
    for i, probe in enumerate(search["trials"] if search else []):
        reason = "; ".join(probe["reasons"]) or "within the SLO"
        cases.append(
            GateCase(
                suite,
                f"probe {i + 1}: {probe['phase']} at {probe['load']:g}",
                probe["passed"],
                reason,
                probe=True,
            )
        )
    if not cell["searched"]:
        for t in cell["trials"]:
            ok = t["status"] == "complete" and not t["generator_saturated"]
            why = (
                "generator fell behind: not a measurement of the system"
                if t["generator_saturated"]
                else str(t["status"])
            )
            cases.append(GateCase(suite, f"trial {t['index']}", ok, why, t["duration_s"] or 0.0))
    return cases
