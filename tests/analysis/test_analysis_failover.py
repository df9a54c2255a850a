"""Database-level recovery, success verdicts and k/K, on hand-made per-database series whose answers
are counted by hand: a probe a database every 0.1 s interval, a fault at 1.0 s."""

from __future__ import annotations

import pytest

from caplab.analysis.failover import (
    IsolatedSide,
    Verdict,
    database_recovery,
    group_recovery,
    judge,
    percentile,
    reported_seconds,
    success_rate,
)
from caplab.analysis.recovery import Interval


def series(counts: list[tuple[int, int]], width: float = 0.1) -> list[Interval]:
    """Intervals of ``width`` from t=0, each (completed, errors)."""
    return [
        Interval(round(k * width, 6), round((k + 1) * width, 6), done, errors)
        for k, (done, errors) in enumerate(counts)
    ]


def outage(dead: int, before: int = 10, after: int = 5) -> list[Interval]:
    """Commits before the fault, ``dead`` intervals of failures only, then commits again."""
    return series([(1, 0)] * before + [(0, 3)] * dead + [(1, 0)] * after)


def test_a_database_recovers_at_its_first_commit_after_the_outage() -> None:
    found = database_recovery("ag_0", outage(7), 1.0)
    assert found.disrupted and found.recovery_s == pytest.approx(0.7) and found.failed == 21


def test_the_interval_where_the_failures_began_is_not_a_recovery_though_it_committed() -> None:
    # 1.0–1.1 commits, then the primary goes: failures in the same interval; then dead; then back.
    counts = [(1, 0)] * 10 + [(1, 2), (0, 3), (0, 3)] + [(1, 0)] * 3
    found = database_recovery("ag_0", series(counts), 1.0)
    assert found.recovery_s == pytest.approx(0.3) and found.failed == 8


def test_a_commit_after_a_dead_interval_counts_even_beside_failures() -> None:
    # The last failed reconnect and the first commit share the interval that starts at 1.2 s.
    counts = [(1, 0)] * 10 + [(0, 3), (0, 3), (1, 1)] + [(1, 0)] * 3
    found = database_recovery("ag_0", series(counts), 1.0)
    assert found.recovery_s == pytest.approx(0.2) and found.failed == 7


def test_a_commit_before_the_old_leader_was_gone_is_not_the_recovery() -> None:
    """A switchover: the old leader checkpoints before it stops (a probe times out, the next one
    commits on it), is gone at 1.5 s by the manager's record, and the database is back at 1.8 s."""
    counts = [(1, 0)] * 10 + [(0, 1), (1, 0), (1, 0), (0, 0), (0, 3), (0, 3), (0, 3), (0, 3), (1, 0), (1, 0)]
    early = database_recovery("ag_0", series(counts), 1.0)
    assert early.recovery_s == pytest.approx(0.1), "without the manager's record: the checkpoint's dip"
    found = database_recovery("ag_0", series(counts), 1.0, leader_gone_s=1.5)
    assert found.disrupted and found.recovery_s == pytest.approx(0.8) and found.failed == 13
    group = group_recovery({"ag_0": series(counts)}, 1.0, leader_gone_s=1.5)
    assert group.max_s == pytest.approx(0.8)


def test_a_database_that_never_commits_again_is_not_recovered_and_one_untouched_took_no_time() -> None:
    never = database_recovery("ag_1", series([(1, 0)] * 10 + [(0, 3)] * 5), 1.0)
    assert never.recovery_s is None and never.failed == 15
    untouched = database_recovery("ag_2", series([(1, 0)] * 15), 1.0)
    assert not untouched.disrupted and untouched.recovery_s == 0.0
    silent = database_recovery("ag_3", series([(1, 0)] * 10 + [(0, 0)] * 5), 1.0)
    assert silent.recovery_s is None, "no request reached it after the fault: no recovery seen"


def test_percentiles_over_databases_are_measured_values() -> None:
    values = [float(v) for v in range(1, 21)]  # 1 … 20 s
    assert percentile(values, 0.5) == 10.0
    assert percentile(values, 0.95) == 19.0
    assert percentile([], 0.5) is None


def test_a_group_spreads_its_databases_and_names_those_that_never_came_back() -> None:
    by_db = {f"ag_{k}": outage(k + 1) for k in range(4)} | {"ag_9": series([(1, 0)] * 10 + [(0, 2)] * 8)}
    group = group_recovery(by_db, 1.0, group_s=0.05)
    assert group.p50_s == pytest.approx(0.2) and group.p95_s == pytest.approx(0.4)
    assert group.max_s == pytest.approx(0.4)
    assert group.not_recovered == ["ag_9"]
    assert group.failed == 3 * (1 + 2 + 3 + 4) + 16
    assert group.group_s == 0.05 and group.resolution_s == pytest.approx(0.1)


def test_a_database_probed_more_slowly_than_the_interval_is_known_to_its_probes_gap() -> None:
    # 400 databases at 1.25 probes a second each: one request every eighth 0.1 s interval, so a
    # commit 0.8 s after the fault may mean the database was back at any time in between.
    sparse = series(([(1, 0)] + [(0, 0)] * 7) * 5)
    group = group_recovery({"ag_0": sparse, "ag_1": outage(2, after=30)}, 1.0)
    assert group.resolution_s == pytest.approx(0.8)
    assert group_recovery({"ag_1": outage(2, after=30)}, 1.0).resolution_s == pytest.approx(0.1)
    edges = series([(1, 0)] * 119 + [(0, 0)])  # 10 a second for 12 s, one request short at the end
    assert group_recovery({"ag_0": edges}, 1.0).resolution_s == pytest.approx(0.1), "not 0.1008"


def test_a_trial_succeeds_only_with_every_database_back_in_time_and_nothing_promised_lost() -> None:
    group = group_recovery({f"ag_{k}": outage(k * 10 + 1) for k in range(3)}, 1.0)  # 0.1, 1.1, 2.1 s
    assert judge(group, within_s=5.0, lost=0, lossless=True) == Verdict(True, [])
    late = judge(group, within_s=2.0, lost=0, lossless=True)
    assert not late.success and late.reasons == [
        "1 database(s) recovered after the 2 s SLO (slowest ag_2: 2.1 s)"
    ]
    lost = judge(group, within_s=5.0, lost=3, lossless=True)
    assert lost.reasons == ["3 acknowledged transaction(s) lost where the mode promises none"]
    assert judge(group, within_s=5.0, lost=3, lossless=False).success, "asynchronous: loss measured, allowed"
    stuck = group_recovery({"ag_0": outage(3), "ag_1": series([(1, 0)] * 10 + [(0, 2)] * 5)}, 1.0)
    assert judge(stuck, within_s=5.0, lost=0, lossless=True).reasons == [
        "1 database(s) not back by the end of the trial: ag_1"
    ]


def test_a_partition_fails_on_a_split_brain_always_and_on_its_loss_where_none_is_promised() -> None:
    group = group_recovery({f"ag_{k}": outage(k * 10 + 1) for k in range(3)}, 1.0)
    said = {"isolated_lost": 147.0, "split_brain_writes": 0.0, "isolated_demoted_after_s": 3.2}
    side = IsolatedSide.from_reported(said)
    assert side == IsolatedSide(147, 0, 3.2)
    assert judge(group, 5.0, 0, lossless=False, isolated=side).success, "asynchronous: counted, allowed"
    assert judge(group, 5.0, 0, lossless=True, isolated=side).reasons == [
        "147 write(s) acknowledged on the isolated side lost where the mode promises none"
    ]
    brain = IsolatedSide.from_reported({"isolated_lost": 0.0, "split_brain_writes": 2.0})
    assert brain is not None and brain.demoted_after_s is None
    assert judge(group, 5.0, 0, lossless=False, isolated=brain).reasons == [
        "split brain: 2 write(s) acknowledged on the isolated side while another node led"
    ]
    assert IsolatedSide.from_reported({"writable_after_s": 9.8}) is None, "a kill reports no isolated side"


def test_k_of_k_carries_each_failures_reasons() -> None:
    verdicts = [("1", Verdict(True)), ("2", Verdict(False, ["ag_3 never recovered"])), ("3", Verdict(True))]
    rate = success_rate(verdicts)
    assert rate.text == "2/3"
    assert rate.failures == [{"trial": "2", "reasons": ["ag_3 never recovered"]}]


def test_the_group_level_time_is_read_from_what_the_action_reported() -> None:
    assert reported_seconds({"writable_after_s": 0.83, "killed_pid": 12}) == 0.83
    assert reported_seconds({}) is None and reported_seconds({"writable_after_s": True}) is None
