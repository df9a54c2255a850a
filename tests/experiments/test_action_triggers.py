"""Actions fired on a condition rather than at a time: the first interval where a latency, an error
share or a collector's figure (a replication lag) crosses its bound, or the load having settled;
and a study file whose condition is wrong says where (exit 2, ``file:line: field: message``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from caplab.analysis.trigger import TriggerError, parse_condition
from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, LatencySummary
from caplab.experiments.actions import TrialActions
from caplab.spec import ActionSpec, SpecError, load_study


def interval(k: int, p99_ms: float = 5.0, completed: int = 100, errors: int = 0) -> IntervalSnapshot:
    """The k-th half-second interval of a trial with no warm-up."""
    latency = LatencySummary(completed, 1.0, 2.0, 2.0, 3.0, p99_ms, p99_ms, p99_ms)
    return IntervalSnapshot(
        k,
        k * 0.5,
        (k + 1) * 0.5,
        False,
        completed + errors,
        completed,
        errors,
        0,
        4,
        completed / 0.5,
        latency,
    )


def wait_done(timed: TrialActions) -> None:
    deadline = time.monotonic() + 10
    while timed.outcomes[0].ended_s is None and time.monotonic() < deadline:
        time.sleep(0.01)


def test_an_action_on_a_latency_condition_fires_at_the_first_interval_where_it_holds(tmp_path: Path) -> None:
    timed = TrialActions([ActionSpec(when="p99 > 50ms", run="echo fired > fired")], {}, tmp_path)
    timed.start()
    for k in range(3):
        timed.observe(interval(k, p99_ms=12.0))
    assert timed.outcomes[0].started_s is None and not (tmp_path / "fired").exists()
    timed.observe(interval(3, p99_ms=73.2))
    timed.observe(interval(4, p99_ms=90.0))  # already due: it fires once
    wait_done(timed)
    [outcome] = timed.stop()
    assert outcome.exit_code == 0 and (tmp_path / "fired").read_text() == "fired\n"
    assert outcome.triggered == "p99 > 50ms: 73.2ms at 2.00s"
    assert "(p99 > 50ms: 73.2ms at 2.00s)" in outcome.describe()


def test_a_replication_lag_condition_reads_the_collectors_samples_of_its_scope(tmp_path: Path) -> None:
    timed = TrialActions(
        [ActionSpec(when="replay_lag_ms[pg:127.0.0.1:7600] >= 100ms", run="true")], {}, tmp_path
    )
    timed.start()
    other = ResourceSample(1.0, "pg:127.0.0.1:7601", "replay_lag_ms", 500.0)
    timed.observe(interval(1), [other, ResourceSample(1.0, "pg:127.0.0.1:7600", "replay_lag_ms", 40.0)])
    assert timed.outcomes[0].triggered is None, "another node's lag is not this condition's"
    timed.observe(interval(2), [ResourceSample(1.5, "pg:127.0.0.1:7600", "replay_lag_ms", 120.0)])
    wait_done(timed)
    [outcome] = timed.stop()
    assert outcome.ok and outcome.triggered == "replay_lag_ms[pg:127.0.0.1:7600] >= 100ms: 120 ms at 1.50s"


def test_an_action_after_steady_waits_for_settled_intervals_without_errors(tmp_path: Path) -> None:
    timed = TrialActions([ActionSpec(after="steady", run="true")], {}, tmp_path)
    timed.start()
    rising = [20, 40, 60, 80, 100, 100]  # warming up: not steady
    for k, done in enumerate(rising):
        timed.observe(interval(k, completed=done))
    timed.observe(interval(6, completed=0, errors=5))  # a failing interval starts the count again
    for k in range(7, 11):
        timed.observe(interval(k, completed=100))
    assert timed.outcomes[0].triggered is None
    timed.observe(interval(11, completed=101))
    wait_done(timed)
    [outcome] = timed.stop()
    assert outcome.ok and (outcome.triggered or "").startswith("steady at 6.00s (200/s over 5 intervals")


def test_a_condition_that_never_held_says_so_and_names_an_unsampled_figure(tmp_path: Path) -> None:
    actions = [
        ActionSpec(when="p99 > 1s", run="true", name="slow"),
        ActionSpec(when="flush_lag_ms > 5", run="true", name="behind"),
    ]
    timed = TrialActions(actions, {}, tmp_path)
    timed.start()
    timed.observe(interval(0))
    outcomes = timed.stop()
    assert [o.started_s for o in outcomes] == [None, None]
    assert outcomes[0].describe() == "slow: not run (p99 > 1s never held)"
    assert (
        outcomes[1].describe()
        == "behind: not run (flush_lag_ms > 5 never held: no collector sampled flush_lag_ms)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("p99 > fast", "'fast' is not a latency with a unit"),
        ("errors > 1", "'1' must be a percentage"),
        ("p99[db] > 5ms", "only a collector's figure takes a [scope]"),
        ("lag is high", "expected METRIC OP VALUE"),
        ("replay_lag_ms > 5s", "'5s' is not a number"),
    ],
)
def test_a_bad_condition_says_what_would_parse(text: str, expected: str) -> None:
    with pytest.raises(TriggerError, match=expected.replace("[", r"\[")):
        parse_condition(text)


STUDY = (
    "name: s\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\nload:\n  rate: 1\n  duration: 5s\nactions:\n"
)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            "  - when: 'p99 > soon'\n    run: 'true'\n",
            "9: actions.0.when: 'p99 > soon': 'soon' is not a latency",
        ),
        ("  - {after: ready, run: 'true'}\n", "9: actions.0.after: Input should be 'steady'"),
        (
            "  - {at: 1s, when: 'p99 > 5ms', run: 'true'}\n",
            "9: actions.0: give at: (a time), when: (a",
        ),
        ("  - {run: 'true'}\n", "9: actions.0: give at: (a time), when: (a condition) or after"),
    ],
)
def test_a_study_names_the_line_of_a_bad_trigger(tmp_path: Path, action: str, expected: str) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY + action)
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value).startswith(f"{path}:{expected}"), caught.value


def test_a_study_takes_an_action_on_a_condition(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        STUDY + "  - {when: 'replay_lag_ms > 100', run: 'true'}\n  - {after: steady, run: 'true'}\n"
    )
    actions = load_study(path).cells[0].config.actions
    assert [(a.at, a.when, a.after) for a in actions] == [
        (None, "replay_lag_ms > 100", None),
        (None, None, "steady"),
    ]
