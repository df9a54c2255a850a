"""The methodology checklist graded on minimal study records: a study that follows each principle
passes it, one that falls short warns or fails with the reason in its own figures, and every
change the checklist proposes is a setting the study parser accepts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from caplab.analysis.drift import Run
from caplab.analysis.methodology import grade_study, intervals, machine_drift, order, repetition
from caplab.analysis.methodology_setup import cost, environment, generator, steady_state, units
from caplab.analysis.methodology_types import (
    CellEvidence,
    Check,
    Grade,
    HeadlineFigure,
    Principle,
    StudyEvidence,
    TrialEvidence,
)
from caplab.engine.result import IntervalSnapshot, LatencySummary
from caplab.spec import load_study

HOST: dict[str, object] = {
    "hostname": "bench",
    "os": "Linux 6.8.0",
    "cpu_model": "AMD EPYC",
    "cores": 4,
    "memory_gb": 16.0,
    "python": "3.11.7",
    "caplab_version": "0.1.0",
    "engine_version": "0.1.0",
    "generator": "local engine threads on this host",
    "disks": [{"name": "vda", "model": "virtio", "size_gb": 100.0, "rotational": False}],
}
LATENCY = LatencySummary(count=100, min=1.0, mean=2.0, p50=2.0, p90=3.0, p95=3.5, p99=4.0, p999=None, max=5.0)


def trial(
    warmup_s: float = 2.0, duration_s: float = 10.0, step_s: float = 1.0, saturated: bool = False
) -> TrialEvidence:
    """A trial with its interval series: warm-up intervals, then the measured window's."""
    count = round((warmup_s + duration_s) / step_s)
    series = tuple(
        IntervalSnapshot(
            index=i,
            start_s=i * step_s,
            end_s=(i + 1) * step_s,
            warmup=i * step_s < warmup_s,
            sent=100,
            completed=100,
            errors=0,
            dropped=0,
            in_flight=1,
            throughput=100.0,
            latency_ms=LATENCY,
        )
        for i in range(count)
    )
    return TrialEvidence(warmup_s, duration_s, series, saturated, 100.0)


def figure(**changes: Any) -> HeadlineFigure:
    base = HeadlineFigure(100.0, "req/s", "replicates", 90.0, 110.0, 3, (92.0, 100.0, 108.0))
    return dataclasses.replace(base, **changes)


def cell(index: int, **changes: Any) -> CellEvidence:
    base = CellEvidence(
        index=index,
        label=f"workers={index + 1}",
        status="complete",
        started_at=f"2026-01-01T10:0{index}:00+00:00",
        trials=(trial(), trial(), trial()),
        steady=True,
        steady_notes=(),
        generator_saturated=False,
        figure=figure(),
        generator_cpus="0",
        system_cpus="1-3",
        placement="generator on CPU 0; roles on CPUs 1-3",
        emulated_hardware=False,
        volumes=0,
        priced=True,
    )
    return dataclasses.replace(base, **changes)


def study(*cells: CellEvidence, **changes: Any) -> StudyEvidence:
    base = StudyEvidence(
        replicates=3,
        repeat=1,
        search_repeats=3,
        job=False,
        closed_model=False,
        think_s=0.0,
        usage_profile=False,
        isolation=None,
        cost=True,
        currency="EUR",
        environment=HOST,
        cells=cells or (cell(0),),
        slo=("p99<=50ms",),
        factors={"workers": 1},
    )
    return dataclasses.replace(base, **changes)


def grades(checks: list[Check]) -> dict[Principle, Grade]:
    return {c.principle: c.grade for c in checks}


STEADY_RUNS = tuple(Run(0, 60.0 * i, 100.0 + (7 * i) % 5, True) for i in range(8))
"""Eight runs of one cell that scatter without drifting: enough for the drift check."""


def test_a_one_cell_study_that_follows_every_principle_passes_every_item() -> None:
    checks = grade_study(study(replicates=8, runs=STEADY_RUNS))
    assert [c.principle for c in checks] == list(Principle)
    assert set(grades(checks).values()) == {Grade.PASS}, [c.reason for c in checks if c.grade != Grade.PASS]
    assert all(c.change is None for c in checks)


def test_repetition_passes_with_replicates_and_states_their_spread() -> None:
    check = repetition(study())
    assert check.grade == Grade.PASS
    assert "replicates: 3" in check.reason and "8.0% (coefficient of variation) between runs" in check.reason


def test_one_run_with_one_trial_fails_repetition_and_asks_for_replicates() -> None:
    one = cell(0, trials=(trial(),), figure=figure(interval="search", replicates=1, replicate_values=()))
    check = repetition(study(one, replicates=1, search_repeats=1))
    assert check.grade == Grade.FAIL
    assert "search.repeats: 1" in check.reason
    assert check.change is not None and check.change.setting == "replicates: 3"


def test_trials_repeated_within_one_run_warn_that_they_miss_the_run_to_run_spread() -> None:
    fixed = cell(0, figure=figure(interval=None, low=None, high=None, replicates=1, replicate_values=()))
    check = repetition(study(fixed, replicates=1, search_repeats=None, repeat=3))
    assert check.grade == Grade.WARN
    assert "load.repeat: 3" in check.reason and "trial-to-trial" in check.reason


def test_two_replicates_warn() -> None:
    assert repetition(study(replicates=2)).grade == Grade.WARN


def test_intervals_pass_only_when_every_figure_has_a_replicate_interval() -> None:
    assert intervals(study(cell(0), cell(1))).grade == Grade.PASS
    bracket = cell(1, figure=figure(interval="search", replicates=1, replicate_values=()))
    check = intervals(study(cell(0), bracket))
    assert check.grade == Grade.WARN
    assert "1 of 2 capacities" in check.reason and "#1 workers=2" in check.reason


def test_a_fixed_load_figure_without_interval_fails_and_the_change_adds_a_search() -> None:
    bare = cell(0, figure=figure(interval=None, low=None, high=None, replicates=1, replicate_values=()))
    check = intervals(study(bare, search_repeats=None))
    assert check.grade == Grade.FAIL and "1 of 1 headline figures carry no interval" in check.reason
    assert check.change is not None and check.change.setting is not None
    assert "search:" in check.change.setting and "replicates: 3" in check.change.setting


def test_order_warns_for_cells_run_one_after_another_and_proposes_interleaving() -> None:
    late = cell(0, started_at="2026-01-01T11:00:00+00:00")
    check = order(study(late, cell(1), order="sequential"))
    assert check.grade == Grade.WARN
    assert "in the order #1, #0" in check.reason and "from 10:01:00 to 11:00:00" in check.reason
    assert "each cell's 3 replicates back to back" in check.reason
    assert check.change is not None and check.change.setting == "order: interleaved"
    # A study stored before caplab recorded its order ran cell after cell: graded the same.
    assert order(study(late, cell(1))).grade == Grade.WARN


def test_order_passes_for_interleaved_replicates_and_names_the_seed() -> None:
    check = order(study(cell(0), cell(1), order="interleaved", seed=4711))
    assert check.grade == Grade.PASS and check.change is None
    assert "order: interleaved, seed 4711" in check.reason


def test_cells_shuffled_but_run_once_warn_and_the_change_adds_replicates() -> None:
    once = [cell(i, figure=figure(replicates=1, replicate_values=())) for i in range(2)]
    check = order(study(*once, replicates=1, order="interleaved", seed=5))
    assert check.grade == Grade.WARN and "once each" in check.reason
    assert check.change is not None and check.change.setting == "replicates: 3\norder: interleaved"


def test_order_passes_for_one_configuration() -> None:
    assert order(study(cell(0), cell(1, started_at=None))).grade == Grade.PASS


def test_drift_passes_when_the_runs_show_none_and_states_the_size() -> None:
    check = machine_drift(study(replicates=8, runs=STEADY_RUNS))
    assert check.grade == Grade.PASS and check.change is None
    assert check.reason.startswith("no drift of the machine shown: later runs ")
    assert "8 runs of one cell, their capacities, 16 pairs of runs of one cell" in check.reason


def test_a_machine_slowed_halfway_warns_with_the_size_of_the_change() -> None:
    """A fixed load's median latency 25 % longer from the study's middle on: runs 20 % slower."""
    runs = tuple(
        Run(i % 2, 60.0 * i, (2.0 if i < 8 else 2.5) * (1 + 0.01 * (i % 3)), False) for i in range(16)
    )
    check = machine_drift(study(cell(0), cell(1), replicates=8, runs=runs))
    assert check.grade == Grade.WARN and check.change is not None
    assert check.change.setting == "order: interleaved", "cells run one after another: interleave them"
    interleaved = machine_drift(study(cell(0), cell(1), replicates=8, runs=runs, order="interleaved"))
    assert interleaved.change is not None and interleaved.change.setting is None
    assert check.reason.startswith("the machine changed during the study: later runs 20% [")
    assert "slower than earlier ones" in check.reason and "fixed loads' median latencies" in check.reason


def test_drift_not_testable_warns_and_asks_for_the_replicates_that_make_it_so() -> None:
    two = machine_drift(study(cell(0), cell(1), runs=STEADY_RUNS[:3]))
    assert two.grade == Grade.WARN and "cannot be tested" in two.reason
    assert two.change is not None and two.change.setting == "replicates: 6"
    one = machine_drift(study(replicates=1))
    assert "the one cell ran once" not in one.reason and "no run recorded" in one.reason
    assert one.change is not None and one.change.setting == "replicates: 8"
    recorded = machine_drift(study(replicates=8))
    assert recorded.change is not None and recorded.change.setting is None, "asks for what it has"


def test_no_warm_up_fails_steady_state() -> None:
    cold = cell(0, trials=(trial(warmup_s=0.0),))
    check = steady_state(study(cold))
    assert check.grade == Grade.FAIL and "#0 workers=1" in check.reason
    assert check.change is not None and check.change.setting == "load: {warmup: 5s}"


def test_an_unsteady_cell_warns_with_what_the_check_saw() -> None:
    notes = ("median latency climbs +40% (+2.0 ms) through the window",)
    drifting = cell(1, steady=False, steady_notes=notes)
    check = steady_state(study(cell(0), drifting))
    assert check.grade == Grade.WARN and "median latency climbs" in check.reason


def test_a_window_too_short_for_the_trend_check_warns_that_steady_state_was_not_checked() -> None:
    short = cell(0, trials=(trial(warmup_s=0.3, duration_s=1.0, step_s=0.5),))
    check = steady_state(study(short))
    assert check.grade == Grade.WARN
    assert "not checked" in check.reason and "1 whole interval(s)" in check.reason
    assert check.change is not None and check.change.setting == "load: {duration: 10s}"
    searched = steady_state(study(short, confirm_s=1.0))
    assert searched.change is not None and searched.change.setting == "search: {confirm: 10s}"


def test_steady_state_passes_with_a_warm_up_and_enough_intervals() -> None:
    check = steady_state(study())
    assert check.grade == Grade.PASS and "2 s" in check.reason and "10 or more intervals" in check.reason


def test_a_saturated_generator_fails_the_generator_item() -> None:
    behind = cell(0, trials=(trial(), trial(saturated=True)))
    check = generator(study(behind))
    assert check.grade == Grade.FAIL and "fell behind its schedule" in check.reason


def test_a_shared_placement_warns_and_asks_for_the_cpus_apart() -> None:
    words = "generator and system shared the host's CPUs"
    shared = cell(0, generator_cpus=None, system_cpus=None, placement=words)
    check = generator(study(shared, isolation="shared"))
    assert check.grade == Grade.WARN
    assert check.change is not None and check.change.setting == 'isolation: {generator: "0", system: "1-3"}'
    no_cpuset = generator(study(shared, isolation=None))
    assert no_cpuset.change is not None and no_cpuset.change.setting is None


def test_the_generator_passes_on_cpus_of_its_own() -> None:
    check = generator(study(cell(0, search_probes_saturated=2)))
    assert check.grade == Grade.PASS
    assert "generator on CPU 0, system on CPUs 1-3" in check.reason and "2 search probe(s)" in check.reason


def test_environment_fails_unrecorded_and_warns_partly_recorded() -> None:
    assert environment(study(environment={})).grade == Grade.FAIL
    partial = environment(study(environment={**HOST, "os": None}))
    assert partial.grade == Grade.WARN and "not recorded: kernel" in partial.reason
    check = environment(study(cell(0, emulated_hardware=True)))
    assert check.grade == Grade.PASS and "AMD EPYC, 4 cores" in check.reason
    assert "emulated hardware in 1 cells" in check.reason


def test_volumes_without_a_storage_baseline_warn() -> None:
    check = environment(study(cell(0, volumes=2)))
    assert check.grade == Grade.WARN
    assert check.change is not None and check.change.setting == "storage_baseline: {}"
    measured = {**HOST, "storage_baseline": {"status": "measured"}}
    assert environment(study(cell(0, volumes=2), environment=measured)).grade == Grade.PASS


def test_users_who_never_think_warn_on_units() -> None:
    users = cell(0, figure=figure(unit="users"))
    check = units(study(users, closed_model=True))
    assert check.grade == Grade.WARN and "thinks for 0 s" in check.reason
    assert units(study(users, closed_model=True, think_s=5.0)).grade == Grade.PASS


def test_cost_warns_without_prices_and_for_an_unpriced_configuration() -> None:
    check = cost(study(cost=False))
    assert check.grade == Grade.WARN
    assert check.change is not None and check.change.setting == (
        'cost: {configurations: [{when: {"workers": 1}, price: 1000}]}'
    )
    unpriced = cost(study(cell(0), cell(1, priced=False)))
    assert unpriced.grade == Grade.WARN and "1 of 2 configurations have no price" in unpriced.reason
    assert cost(study(cell(0), cell(1))).grade == Grade.PASS


SHORTFALLS = [
    study(cell(0, trials=(trial(),), figure=None), replicates=1, search_repeats=1, cost=False),
    study(cell(0, figure=figure(interval=None, low=None, high=None)), search_repeats=None, slo=()),
    study(cell(0, trials=(trial(warmup_s=0.0),)), replicates=2),
    study(cell(0, trials=(trial(warmup_s=0.3, duration_s=1.0, step_s=0.5),)), confirm_s=1.0),
    study(cell(0, trials=(trial(saturated=True),))),
    study(cell(0, generator_cpus=None, placement="shared", volumes=1), isolation="shared"),
    study(cell(0, figure=figure(unit="users")), closed_model=True, cost=False, profiles=("small",)),
    study(cell(0), cell(1), order="sequential"),
    study(cell(0), cell(1), replicates=1, order="sequential"),
]


def _merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if nested else value
    return out


@pytest.mark.parametrize("record", SHORTFALLS, ids=range(len(SHORTFALLS)))
def test_every_setting_the_checklist_proposes_is_accepted_by_the_study_parser(
    record: StudyEvidence, tmp_path: Path
) -> None:
    settings = [c.change.setting for c in grade_study(record) if c.change and c.change.setting]
    assert settings
    base: dict[str, Any] = {
        "name": "checked",
        "target": {"http": {"url": "http://127.0.0.1:8080/"}},
        "sut": {"start": "true", "roles": {"server": {"match": "server", "profile": "small"}}},
        "profiles": {"small": {"cpus": 1}},
        "factors": {"workers": [1, 2]},
        "load": {"duration": "1s"},
        "slo": ["p99<=50ms"],
        "search": {"repeats": 1},
    }
    for setting in settings:
        path = tmp_path / "study.yaml"
        path.write_text(yaml.safe_dump(_merged(base, yaml.safe_load(setting))))
        load_study(path)  # raises, naming the key, on a setting the parser refuses


def test_repetition_says_how_many_runs_until_took() -> None:
    """``replicates: {min: 3, max: 10, until: 5%}`` stores min as the setting; cells that needed
    more runs to reach the interval say so."""
    added = study(cell(0, figure=figure(replicates=3)), cell(1, figure=figure(replicates=7)))
    check = repetition(added)
    assert check.grade == Grade.PASS
    assert "each cell ran 3 to 7 times (at least 3, more added until" in check.reason
    assert "ran 3 times (replicates: 3)" in repetition(study()).reason
