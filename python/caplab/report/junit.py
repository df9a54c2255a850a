"""SLO verdicts as a JUnit XML file: the format every CI system reads (GitHub Actions, GitLab,
Jenkins), one test case per verdict, a failed SLO a failed case with its reason — as k6's
thresholds are read in a pipeline."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GateCase:
    """One verdict: ``suite`` groups the cases of one trial or cell (``load``, ``cell 2 trial 3``)."""

    suite: str
    name: str
    passed: bool
    reason: str
    seconds: float = 0.0


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
    return sum(not c.passed for c in cases)
