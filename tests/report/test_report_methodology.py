"""The Methodology section on the session's two real studies: results.json's checklist graded from
each study's own record (its replicates, its search's repeats, its warm-up, its placement), and the
same items, last, in index.html and report.md."""

from __future__ import annotations

from typing import Any

from support.reports import Built, fixed_study, scaleout_study

PRINCIPLES = [
    "repetition",
    "intervals",
    "order",
    "drift",
    "steady_state",
    "generator",
    "environment",
    "units",
    "cost",
]


def _items(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    items = results["methodology"]
    assert [i["principle"] for i in items] == PRINCIPLES
    return {i["principle"]: i for i in items}


def test_the_searched_study_is_graded_from_its_record(built: Built) -> None:
    """Study 1: one search per cell with one confirmation, brackets for intervals, three cells in
    matrix order, a 300 ms warm-up, `isolation: shared`, no prices."""
    spec = scaleout_study(0)
    items = _items(built.scaleout.results)
    assert items["repetition"]["grade"] == "fail"
    assert f"search.repeats: {spec['search']['repeats']}" in items["repetition"]["reason"]
    assert items["repetition"]["change"]["setting"] == "replicates: 3"
    assert items["intervals"]["grade"] == "warn"
    assert "3 of 3 capacities carry only their search's bracket" in items["intervals"]["reason"]
    assert items["order"]["grade"] == "warn"
    assert "3 cells ran one after another in matrix order" in items["order"]["reason"]
    assert items["order"]["change"]["setting"] == "replicates: 3\norder: interleaved"
    assert "0.3 s warm-up" in items["steady_state"]["reason"]
    if _fell_behind(built.scaleout.results):
        assert items["generator"]["grade"] == "fail"  # whatever its placement: see the fixed study
    else:
        assert items["generator"]["grade"] == "warn" and "isolation: shared" in items["generator"]["reason"]
        assert items["generator"]["change"]["setting"].startswith("isolation: {generator:")
    assert items["environment"]["grade"] == "pass"
    assert built.scaleout.results["environment"]["os"] in items["environment"]["reason"]
    assert items["units"]["grade"] == "pass" and "p99<=100ms" in items["units"]["reason"]
    assert items["cost"]["grade"] == "warn" and '"workers": 1' in items["cost"]["change"]["setting"]


def test_the_fixed_load_study_is_graded_from_its_record(built: Built) -> None:
    """Study 2: fixed loads repeated twice in one run, no interval on their throughput; its failed
    cell started but measured nothing."""
    repeat = fixed_study(0)["load"]["repeat"]
    results = built.fixed.results
    items = _items(results)
    assert items["repetition"]["grade"] == "warn"
    assert f"load.repeat: {repeat}" in items["repetition"]["reason"]
    assert items["intervals"]["grade"] == "fail"
    assert "2 of 2 headline figures carry no interval" in items["intervals"]["reason"]
    assert "search:" in items["intervals"]["change"]["setting"]
    placed = [c["placement"] for c in results["cells"] if c["status"] == "complete"]
    apart = all(p and p.startswith("generator on CPU") for p in placed)
    # A generator that fell behind in a measured trial fails the item whatever its placement: on a
    # busy machine (beside two other test workers) it did.
    behind = _fell_behind(results)
    assert items["generator"]["grade"] == ("fail" if behind else "pass" if apart else "warn")
    assert "placement in 2 of 3 cells" in items["environment"]["reason"]


def test_the_report_ends_with_the_methodology_section(built: Built) -> None:
    for written in (built.scaleout, built.fixed):
        markdown = written.markdown
        headings = [line for line in markdown.splitlines() if line.startswith("## ")]
        assert headings[-1].endswith("Methodology")
        section = markdown[markdown.index(headings[-1]) :]
        for item in written.results["methodology"]:
            assert item["title"] in section and item["grade"] in section
        assert "Papadopoulos" in section
        html = written.html
        assert '<section id="methodology">' in html
        assert html.index('<section id="methodology">') > html.index('<section id="appendix">')
    assert "replicates: 3" in built.scaleout.markdown.split("Methodology")[-1]


def _fell_behind(results: dict[str, Any]) -> bool:
    """Whether the study's record shows its generator behind schedule in a cell or in a measured
    trial: a search's probe (bracket, bisect) where it fell behind was rejected, and grades nothing."""
    return any(
        c["metrics"]["generator_saturated"]
        or any(
            t["generator_saturated"]
            for t in c["trials"]
            if not t["kind"].startswith("search:") or t["kind"] == "search:confirm"
        )
        for c in results["cells"]
        if c["trials"]
    )
