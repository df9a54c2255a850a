"""The Findings section and results.json's ``findings``: the study file's claims judged against
the figures the results document holds — hand-made documents for the verdicts, and the session's
real study (knownserver, workers 1–3) with findings added to its file for the whole report."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from caplab.report.layout.blocks import KeyFigures, Report
from caplab.report.layout.findings import findings_section
from caplab.report.model.findings import study_findings
from caplab.report.model.types import Measured, Results
from caplab.report.render.html import render_html
from caplab.report.render.markdown import render_markdown
from caplab.store.reading import SampleRow
from support.reports import Built, caplab

SSD_OVER_HDD = {
    "claim": "SSDs carry more",
    "paper": "11,000 against 3,200 msg/s",
    "compare": {"metric": "capacity", "cells": {"setup": "ssd"}, "over": {"setup": "hdd"}, "ratio": ">1"},
}


def cell(index: int, setup: str, limit: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "index": index,
        "label": f"setup={setup}",
        "factors": {"setup": setup},
        "roles": ["db"],
        "resources": {"db": {"cpu_percent": 50.0 + index}},
        "metrics": {"throughput": 100.0, "latency_ms": {"p99": 20.0}, "capacity": None},
        "limit": {"resource": limit, "kind": "hardware"} if limit else None,
        "recovery": [],
        "failover": [],
        "success": None,
        **extra,
    }


def capacity(index: int, value: float, ci95: list[float], interval: str) -> dict[str, Any]:
    return {"cell": index, "value": value, "ci95": ci95, "interval": interval, "basis": "capacity"}


def measured(capacities: list[dict[str, Any]]) -> Measured:
    cells = [cell(0, "ssd", "cpu:host"), cell(1, "hdd", "volume:data")]
    return cast(Measured, {"cells": cells, "capacity": capacities, "jobs": None, "consolidation": []})


def test_replicate_intervals_decide_a_comparison() -> None:
    """ssd 200 [190, 210] over hdd 100 [95, 105]: 2.0, 190/105 = 1.81 to 210/95 = 2.21."""
    doc = measured([capacity(0, 200, [190, 210], "replicates"), capacity(1, 100, [95, 105], "replicates")])
    (entry,) = study_findings({"findings": [SSD_OVER_HDD]}, doc)
    assert entry["verdict"] == "reproduced" and entry["kind"] == "compare"
    (ratio,) = entry["estimates"]
    assert (
        ratio["value"] == 2.0
        and ratio["low"] == pytest.approx(190 / 105)
        and ratio["high"] == pytest.approx(210 / 95)
    )
    assert [f["text"] for f in entry["figures"]] == ["200 [190, 210]", "100 [95, 105]"]
    assert entry["paper"] == "11,000 against 3,200 msg/s"


def test_a_search_bracket_is_not_an_interval_a_cell_counts_as_its_point_value() -> None:
    """The same capacities with each search's bracket wide enough to overlap: judged on the points
    (2.0), and the reason says a side had no interval."""
    doc = measured([capacity(0, 120, [60, 240], "search"), capacity(1, 100, [50, 200], "search")])
    (entry,) = study_findings({"findings": [SSD_OVER_HDD]}, doc)
    assert (
        entry["verdict"] == "reproduced"
        and entry["estimates"][0]["low"] == entry["estimates"][0]["high"] == 1.2
    )
    assert "without an interval" in entry["reason"]


def test_each_replicate_is_a_point_of_a_trend() -> None:
    """Two cells of three replicates each: six points, so a slope with an interval where two means
    alone would have none. workers 1: 100, 104, 96; workers 2: 200, 196, 204 — slope 100, residuals
    ±4 and 0, SSR 64, se √(16 / 1.5) = 3.27, t(4) = 2.78: 100 ± 9.08."""
    cells = []
    for i, values in enumerate([[100.0, 104.0, 96.0], [200.0, 196.0, 204.0]]):
        one = cell(i, "ssd") | {"factors": {"workers": i + 1}, "label": f"workers={i + 1}"}
        one["metrics"] = one["metrics"] | {"capacity": {"replicate_values": values}}
        cells.append(one)
    doc = cast(
        Measured,
        {
            "cells": cells,
            "capacity": [
                capacity(0, 100, [90, 110], "replicates"),
                capacity(1, 200, [190, 210], "replicates"),
            ],
            "jobs": None,
            "consolidation": [],
        },
    )
    trend = {
        "claim": "more workers more",
        "trend": {"metric": "capacity", "factor": "workers", "sign": "rising"},
    }
    (entry,) = study_findings({"findings": [trend]}, doc)
    (slope,) = entry["estimates"]
    assert entry["verdict"] == "reproduced" and "6 points" in entry["reason"]
    high = slope["high"]
    assert slope["value"] == pytest.approx(100) and high is not None
    assert high - slope["value"] == pytest.approx(9.08, abs=0.01)


def test_limits_and_cpu_are_read_from_the_cells() -> None:
    doc = measured([])
    findings = [
        {"claim": "ssd: cpu", "limit": {"kind": "cpu", "cells": {"setup": "ssd"}}},
        {"claim": "hdd: cpu", "limit": {"kind": "cpu", "cells": {"setup": "hdd"}}},
        {
            "claim": "hdd costs more CPU",
            "compare": {"metric": "cpu", "cells": {"setup": "hdd"}, "over": {"setup": "ssd"}, "ratio": ">1"},
        },
    ]
    verdicts = [e["verdict"] for e in study_findings({"findings": findings}, doc)]
    assert verdicts == ["reproduced", "contradicted", "reproduced"]  # 51 % over 50 %: point values


def test_no_findings_no_section_and_a_finding_that_no_longer_validates_is_left_out() -> None:
    doc = measured([])
    assert study_findings({}, doc) == []
    assert study_findings({"findings": [{"claim": "x", "limit": {"kind": "quantum"}}]}, doc) == []
    assert findings_section(cast(Results, {"findings": []})) is None


def test_the_section_shows_claim_paper_evidence_verdict_and_reason() -> None:
    doc = measured([capacity(0, 200, [190, 210], "replicates"), capacity(1, 100, [95, 105], "replicates")])
    findings = [
        SSD_OVER_HDD,
        {"claim": "the HDD binds on its CPU", "limit": {"kind": "cpu", "cells": {"setup": "hdd"}}},
    ]
    section = findings_section(cast(Results, {"findings": study_findings({"findings": findings}, doc)}))
    assert section is not None and section.title == "Findings"
    report = Report("t", "t", [section])
    markdown = render_markdown(report, lambda c: Path(c.id), "now")
    html = render_html(report, "now")
    for text in (markdown, html):
        assert "SSDs carry more" in text and "11,000 against 3,200 msg/s" in text
        assert "ratio 2 [1.81, 2.21]" in text
        assert "reproduced" in text and "contradicted" in text
        assert "Paper (its hardware)" in text and "not this machine" in text
    assert "Findings: 1 reproduced, 1 contradicted" in markdown


# -- the whole report, from the session's real study -------------------------------------------


def test_the_report_of_a_real_study_shows_its_findings_right_after_the_summary(
    study_document: dict[str, Any], study_samples: list[SampleRow]
) -> None:
    """knownserver's capacity with 1, 2 and 3 workers (one search each: point values); the claims
    are judged from its data, so what each verdict is depends on the run — what must hold is where
    they are, that each kind gives one of the three verdicts, and that results.json carries them."""
    from caplab.report.document import build_results, dumps
    from caplab.report.layout.sections import build_report

    varied = copy.deepcopy(study_document)
    varied["study"]["spec"] += (
        "\nfindings:\n"
        "  - claim: more workers carry more\n"
        "    paper: a line of its own\n"
        "    trend: {metric: capacity, factor: workers, sign: rising}\n"
        "  - claim: three workers carry more than one\n"
        "    compare: {metric: capacity, cells: {workers: 3}, over: {workers: 1}, ratio: '>1'}\n"
        "  - claim: the CPU binds\n"
        "    limit: {kind: cpu}\n"
    )
    results = build_results(varied, study_samples)
    assert [f["kind"] for f in results["findings"]] == ["trend", "compare", "limit"]
    assert {f["verdict"] for f in results["findings"]} <= {"reproduced", "contradicted", "inconclusive"}
    assert results["findings"][0]["estimates"][0]["name"] == "slope"
    assert '"findings": [' in dumps(results)
    report = build_report(results)
    assert [s.title for s in report.sections][:2] == ["Summary", "Findings"]
    key = next(b for b in report.sections[0].blocks if isinstance(b, KeyFigures))
    held = sum(f["verdict"] == "reproduced" for f in results["findings"])
    assert any(f.label == "findings reproduced" and f.value == f"{held} of 3" for f in key.items)
    plain = build_results(study_document, study_samples)
    assert plain["findings"] == [] and "Findings" not in [s.title for s in build_report(plain).sections]


FINDINGS_TEXT = (
    "\nfindings:\n"
    "  - claim: more workers carry more\n"
    "    trend: {metric: capacity, factor: workers, sign: rising}\n"
    "  - claim: the CPU binds\n"
    "    limit: {kind: cpu}\n"
)


def test_caplab_show_judges_the_findings_as_the_report_does(built: Built, tmp_path: Path) -> None:
    """The session's study, copied, with findings added to its stored file: `caplab show` prints
    each claim with the verdict the report's results give it, and `--json` carries them."""
    from caplab.report.document import load_results
    from caplab.store import Store

    copy_url = f"sqlite:///{tmp_path / 'copy.db'}"
    with (
        sqlite3.connect(built.db_url.removeprefix("sqlite:///")) as src,
        sqlite3.connect(tmp_path / "copy.db") as dst,
    ):
        src.backup(dst)
        dst.execute("UPDATE studies SET spec_text = spec_text || ? WHERE id = 1", (FINDINGS_TEXT,))
    with Store(copy_url) as store:
        expected = load_results(store, 1)["findings"]
    assert [f["claim"] for f in expected] == ["more workers carry more", "the CPU binds"]
    shown = caplab("show", "1", "--db", copy_url)
    assert shown.returncode == 0, shown.stderr
    held = sum(f["verdict"] == "reproduced" for f in expected)
    assert f"findings: {held} of 2 reproduced" in shown.stdout
    for f in expected:
        row = next(line for line in shown.stdout.splitlines() if f["claim"] in line)
        assert f["verdict"] in row, (row, f)
    as_json = json.loads(caplab("show", "1", "--db", copy_url, "--json").stdout)
    assert as_json["findings"] == expected
    plain = caplab("show", "1", "--db", built.db_url)
    assert plain.returncode == 0 and "findings:" not in plain.stdout
