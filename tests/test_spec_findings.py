"""A study's ``findings:``: claims the study's own matrix can judge load; a claim no cell could judge
is a bad study file, named with its line. Each file is written out in the test, so the expected
line can be read off the text itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.spec import SpecError, load_study

STUDY = (
    "name: disks\n"  # 1
    "target:\n"  # 2
    "  http: {url: 'http://127.0.0.1:8080/'}\n"  # 3
    "factors:\n"  # 4
    "  setup: [hdd, ssd]\n"  # 5
    "  workers: [1, 2, 4]\n"  # 6
    "load: {rate: 100}\n"  # 7
    "findings:\n"  # 8
)
"""Six cells (setup × workers); findings start on line 9."""
SIDES = "metric: capacity, cells: {setup: ssd}, over: {setup: hdd}"
"""A comparison's two sides, each three cells (one per worker count) unless per: or workers: says."""


def spec_error(tmp_path: Path, findings: str) -> str:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY + findings)
    with pytest.raises(SpecError) as caught:
        load_study(path)
    return str(caught.value).removeprefix(f"{path}:")


def test_findings_of_every_kind_load_typed(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        STUDY + "  - claim: an SSD carries more\n"
        "    paper: 11,000 against 3,200 msg/s\n"
        f"    compare: {{{SIDES}, ratio: '>1', per: workers}}\n"
        "  - claim: more workers carry more\n"
        "    trend: {metric: capacity, factor: workers, sign: rising, cells: {setup: ssd}}\n"
        "  - claim: the HDD binds\n"
        "    limit: {kind: disk, cells: {setup: hdd}}\n"
        "  - claim: workers rank\n"
        "    rank: {metric: p99, factor: workers, order: [4, 2, 1], cells: {setup: ssd}}\n"
    )
    study = load_study(path)
    assert [f.kind for f in study.findings] == ["compare", "trend", "limit", "rank"]
    compare = study.findings[0].compare
    assert compare is not None and compare.ratio.op == ">" and compare.ratio.low == 1.0
    assert study.findings[0].paper == "11,000 against 3,200 msg/s"
    assert len(study.cells) == 6  # findings are the study's, not a factor or a cell's


@pytest.mark.parametrize(
    ("findings", "expected"),
    [
        pytest.param(
            "  - claim: x\n    compare: {"
            + SIDES.replace("{setup: ssd}", "{disk: ssd}")
            + ", ratio: '>1'}\n",
            "10: findings.0.compare.cells.disk: 'disk' is not a factor (the factors: setup, workers)",
            id="unknown-factor",
        ),
        pytest.param(
            "  - claim: x\n    limit: {kind: disk, cells: {setup: nvme}}\n",
            "10: findings.0.limit.cells.setup: 'nvme' is not a value of setup (hdd, ssd)",
            id="unknown-value",
        ),
        pytest.param(
            "  - claim: x\n    compare: {" + SIDES + ", ratio: '>1'}\n",
            "10: findings.0.compare.cells: matches 3 cells: name one value of each of workers",
            id="a-side-of-several-cells",
        ),
        pytest.param(
            "  - claim: x\n    compare:\n      metric: latency\n      cells: {setup: ssd}\n",
            "11: findings.0.compare.metric: Input should be 'capacity', 'throughput'",
            id="unknown-metric",
        ),
        pytest.param(
            "  - claim: x\n    compare: {" + SIDES + ", ratio: 'more', per: workers}\n",
            "10: findings.0.compare.ratio: 'more': expected a bound such as '>1'",
            id="bad-ratio",
        ),
        pytest.param(
            "  - claim: x\n    trend: {metric: capacity, factor: setup, sign: rising}\n",
            "10: findings.0.trend.factor: 'setup' is not numeric (hdd, ssd)",
            id="trend-on-words",
        ),
        pytest.param(
            "  - claim: x\n    trend: {metric: capacity, factor: workers, sign: up}\n",
            "10: findings.0.trend.sign: Input should be 'rising', 'falling' or 'flat'",
            id="trend-sign",
        ),
        pytest.param(
            "  - claim: x\n    rank: {metric: capacity, factor: workers, order: [1, 3]}\n",
            "10: findings.0.rank.order.1: 3 is not a value of workers (1, 2, 4)",
            id="rank-unknown-value",
        ),
        pytest.param(
            "  - claim: x\n    success: {at_least: 1.0}\n",
            "10: findings.0.success: the study has no actions: (no failover to count)",
            id="success-without-a-failover",
        ),
        pytest.param(
            "  - claim: x\n    compare: {" + SIDES.replace("capacity", "items_per_s") + ", ratio: '>1'}\n",
            "10: findings.0.compare: phase: goes with metric items_per_s",
            id="items-without-a-phase",
        ),
        pytest.param(
            "  - claim: x\n    limit: {kind: disk}\n    success: {at_least: 1}\n",
            "9: findings.0: a finding needs exactly one of compare, trend, limit",
            id="two-judgements",
        ),
        pytest.param(
            "  - claim: x\n    limt: {kind: disk}\n",
            "10: findings.0.limt: unknown field (did you mean limit?)",
            id="misspelt-kind",
        ),
        pytest.param(
            "  - claim: x\n    limit: {kind: disk, cells: {setup: [hdd, nvme]}}\n",
            "10: findings.0.limit.cells.setup: 'nvme' is not a value of setup (hdd, ssd)",
            id="unknown-value-in-a-list",
        ),
        pytest.param(
            "  - limit: {kind: disk}\n",
            "9: findings.0.claim: required field is missing",
            id="no-claim",
        ),
    ],
)
def test_a_finding_the_study_cannot_judge_is_named_with_its_line(
    tmp_path: Path, findings: str, expected: str
) -> None:
    assert spec_error(tmp_path, findings).startswith(expected)


def test_a_misspelt_findings_section_is_suggested(tmp_path: Path) -> None:
    text = STUDY.replace("findings:\n", "findngs:\n") + "  - claim: x\n"
    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value) == f"{path}:8: findngs: unknown field (did you mean findings?)"


def test_a_job_phase_the_job_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: j\nfactors:\n  objects: [1, 2, 3]\njob:\n  phases:\n    - {name: stage, run: 'true'}\n"
        "findings:\n  - claim: x\n"
        "    trend: {metric: items_per_s, phase: sync, factor: objects, sign: falling}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value) == (
        f"{path}:9: findings.0.trend.phase: 'sync' is not a phase of the job (its phases: stage)"
    )


@pytest.mark.parametrize(
    ("judgement", "expected"),
    [
        ("success: {at_least: 1}", "success: the study has no recovery: SLO"),
        ("no_loss: true", "no_loss: no ledger of acknowledged writes: give target.postgres ledger: true"),
    ],
)
def test_a_failover_claim_needs_what_it_is_judged_from(tmp_path: Path, judgement: str, expected: str) -> None:
    """Actions alone are not enough: a success is counted against the recovery SLO, a loss from the
    ledger of acknowledged writes."""
    path = tmp_path / "study.yaml"
    path.write_text(
        STUDY.replace("findings:\n", "actions:\n  - {at: 1s, run: 'true'}\nfindings:\n")
        + f"  - claim: x\n    {judgement}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value) == f"{path}:12: findings.0.{expected}" + (
        " (what a failover must meet to succeed)" if "success" in judgement else ""
    )
