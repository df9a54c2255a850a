"""A failover study's summary figures on hand-made trials whose answers are counted by hand: each
action's recovery pooled over its trials, requests split at the outages, consistency judged on each
side of an outage and never across it."""

from __future__ import annotations

import pytest

from caplab.analysis.failover import IsolatedSide
from caplab.analysis.outage import (
    Around,
    IsolatedOver,
    Outage,
    Slot,
    TrialRecovery,
    around_outages,
    is_failover_study,
    outage_end,
    pooled,
    split_at_outages,
    summarise_actions,
)


def trial(action: str, times: list[float], group_s: float | None = 1.0, **kw: object) -> TrialRecovery:
    fields: dict[str, object] = {
        "databases": len(times),
        "not_recovered": 0,
        "resolution_s": 0.1,
        "acknowledged": 100,
        "lost": 0,
        "success": True,
        "after_ratio": 1.0,
        "failed": 10,
    }
    return TrialRecovery(action=action, group_s=group_s, database_s=times, **(fields | kw))  # type: ignore[arg-type]


def test_an_actions_database_level_is_over_every_database_of_every_trial() -> None:
    # Trial medians 1.5 and 5.5; pooled, the 8 databases' nearest-rank p50 is the 4th: 2.0.
    [switchover, kill] = summarise_actions(
        [
            trial("switchover", [1.0, 1.5, 2.0, 1.2], group_s=0.8),
            trial("kill-primary", [3.0], group_s=2.5, success=False, lost=3, acknowledged=50),
            trial("switchover", [5.0, 5.5, 6.0, 5.2], group_s=4.0, after_ratio=0.8),
        ]
    )
    assert switchover.action == "switchover" and switchover.trials == 2 and switchover.databases == [4]
    assert switchover.database_p50_s == 2.0 and switchover.database_p95_s == 6.0
    assert switchover.database_max_s == 6.0
    assert (switchover.group_p50_s, switchover.group_max_s) == (0.8, 4.0)
    assert (switchover.acknowledged, switchover.lost, switchover.successes, switchover.judged) == (
        200,
        0,
        2,
        2,
    )
    assert (switchover.after_p50, switchover.after_min, switchover.failed) == (0.8, 0.8, 20)
    assert (kill.successes, kill.judged, kill.lost, kill.acknowledged) == (0, 1, 3, 50)


def test_without_a_ledger_or_a_recovery_slo_nothing_is_claimed_of_either() -> None:
    [a] = summarise_actions([trial("switchover", [1.0], lost=None, acknowledged=None, success=None)])
    assert a.lost is None and a.acknowledged is None and a.successes is None and a.judged == 0


def test_a_study_is_a_failover_study_only_when_nothing_was_searched_and_failovers_were_read() -> None:
    assert is_failover_study([False, False], failovers=4, job=False)
    assert not is_failover_study([True, False], failovers=4, job=False), "a capacity searched"
    assert not is_failover_study([False], failovers=0, job=False), "an action with no failover read"
    assert not is_failover_study([False], failovers=2, job=True)


def slots(rows: list[tuple[int, int, int]], width: float = 0.1, warmup: int = 0) -> list[Slot]:
    """Intervals of ``width`` from t=0, each (completed, errors, dropped); the first ``warmup``
    are warm-up."""
    return [
        Slot(round(k * width, 6), round((k + 1) * width, 6), done, errors, dropped, k < warmup)
        for k, (done, errors, dropped) in enumerate(rows)
    ]


def test_what_fails_inside_an_outage_is_counted_apart_from_what_fails_outside() -> None:
    # warm-up (1 error, not counted) | 5 good | outage 1.0–1.5 s: 4 failing | 2 errors later | 5 good
    rows = [(10, 1, 0)] * 5 + [(10, 0, 0)] * 5 + [(0, 3, 2)] * 4 + [(10, 0, 0)] + [(9, 1, 1)] * 2
    rows += [(10, 0, 0)] * 5
    split = split_at_outages(slots(rows, warmup=5), [Outage(1.0, outage_end(1.0, 0.3, 0.5))])
    assert (split.errors_inside, split.dropped_inside) == (12, 8)
    assert (split.errors_outside, split.dropped_outside) == (2, 2)
    assert split.sent == 5 * 10 + 4 * 3 + 10 + 2 * 10 + 5 * 10


def test_an_outage_never_over_runs_to_the_end_of_the_trial() -> None:
    assert outage_end(1.0, 0.3, None) is None
    rows = [(10, 0, 0)] * 10 + [(0, 3, 0)] * 4 + [(10, 1, 0)] * 3
    split = split_at_outages(slots(rows), [Outage(1.0, None)])
    assert (split.errors_inside, split.errors_outside) == (15, 0)


def test_consistency_is_judged_before_and_after_the_outage_never_across_it() -> None:
    # Steady at 100/s on both sides; the outage (0/s) and the burst of held requests after it
    # (300/s) would read as a wildly fluctuating rate if judged across.
    rows = [(10, 0, 0)] * 10 + [(0, 3, 0)] * 5 + [(30, 0, 0)] * 2 + [(10, 0, 0)] * 10
    outage = [Outage(1.0, outage_end(1.0, 0.5))]
    around = around_outages(slots(rows), outage, ceiling_rps=100 / 0.9)
    assert around.before_cv == pytest.approx(0.0) and around.after_cv == pytest.approx(0.0)
    assert (around.before, around.after) == ("good", "good")
    across = around_outages(slots(rows), [])
    assert across.before == "poor", "the same trial judged across its outage"


def test_after_an_outage_that_never_ended_consistency_is_not_claimed() -> None:
    rows = [(10, 0, 0)] * 10 + [(0, 3, 0)] * 10
    around = around_outages(slots(rows), [Outage(1.0, None)])
    assert around.before == "good" and around.after is None and around.after_cv is None
    both = pooled([Around(0.1, None), Around(0.3, 0.2)])
    assert both.before_cv == pytest.approx(0.2) and both.after_cv == pytest.approx(0.2)


def test_the_isolated_sides_of_an_actions_partitions_are_summed_and_the_latest_demotion_kept() -> None:
    sides = [IsolatedSide(147, 0, 3.2), IsolatedSide(383, 1, 8.4)]
    assert IsolatedOver.over(sides) == IsolatedOver(2, 1, 530, 8.4)
    assert IsolatedOver.over([*sides, IsolatedSide(0, 0, None)]) == IsolatedOver(3, 1, 530, None), (
        "a side never demoted leaves no latest demotion to quote"
    )
    assert IsolatedOver.over([]) is None
