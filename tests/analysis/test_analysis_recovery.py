"""Recovery read from an interval series, on hand-made series whose answers are counted by hand:
100 requests per 0.1 s interval before the fault, an outage, then back."""

from __future__ import annotations

import pytest

from caplab.analysis.recovery import Interval, recovery, recovery_line


def series(counts: list[tuple[int, int]], width: float = 0.1) -> list[Interval]:
    """Intervals of ``width`` from t=0, each (completed, errors); the first two are warm-up."""
    return [
        Interval(round(k * width, 6), round((k + 1) * width, 6), done, errors, warmup=k < 2)
        for k, (done, errors) in enumerate(counts)
    ]


def test_an_outage_is_timed_from_the_fault_to_the_first_settled_intervals() -> None:
    # Fault at 1.0 s; no completions for 0.5 s, 40 errors; a half-good interval; then back at 1.6 s.
    counts = [(100, 0)] * 10 + [(0, 10)] * 4 + [(0, 0), (50, 0)] + [(100, 0)] * 6
    found = recovery(series(counts), 1.0)
    assert found.before_rps == pytest.approx(1000.0)
    assert found.disrupted
    assert found.recovery_s == pytest.approx(0.6)
    assert found.unavailable_s == pytest.approx(0.5)
    assert found.failed == 40
    assert found.after_rps == pytest.approx(1000.0) and found.after_ratio == pytest.approx(1.0)
    assert found.resolution_s == pytest.approx(0.1)
    assert recovery_line(found).startswith(
        "recovered after 0.6s (± 0.1s); 0.5s with no completion, 40 requests"
    )


def test_one_good_interval_between_bad_ones_is_not_a_recovery() -> None:
    counts = [(100, 0)] * 10 + [(0, 5), (100, 0), (0, 5), (0, 5)] + [(100, 0)] * 3
    found = recovery(series(counts), 1.0)
    assert found.recovery_s == pytest.approx(0.4)
    assert found.failed == 15


def test_a_dip_before_the_outage_is_not_its_end() -> None:
    # A switchover at 50 databases (study 1's first trial, 10 per 0.1 s here): commits slowed by its
    # checkpoint 1 s after the action, two normal intervals, then 0.8 s with nothing but errors.
    counts = [(100, 0)] * 10 + [(100, 0)] * 10 + [(60, 0), (130, 0), (100, 0), (60, 1)]
    counts += [(0, 30)] * 8 + [(150, 0)] + [(100, 0)] * 6
    found = recovery(series(counts), 1.0)
    assert found.recovery_s == pytest.approx(2.2), "back at 3.2 s, not at the dip's end (1.1 s)"
    assert found.failed == 1 + 8 * 30 and found.unavailable_s == pytest.approx(0.8)


def test_a_load_that_never_comes_back_says_so_and_a_quiet_fault_is_no_disruption() -> None:
    down = recovery(series([(100, 0)] * 10 + [(0, 3)] * 5), 1.0)
    assert down.recovery_s is None and down.after_rps is None and down.failed == 15
    assert "not recovered by the end of the trial" in recovery_line(down)
    quiet = recovery(series([(100, 0)] * 20), 1.0)
    assert not quiet.disrupted and quiet.recovery_s == 0.0 and quiet.failed == 0


def test_throughput_that_comes_back_lower_is_reported_as_a_share_of_before() -> None:
    # Back without errors, but a node short: 95 per interval (within the recovered share) after.
    found = recovery(series([(100, 0)] * 10 + [(0, 4)] + [(95, 0)] * 8), 1.0)
    assert found.after_ratio == pytest.approx(0.95)


def test_the_burst_of_held_requests_is_recovery_but_not_the_rate_after() -> None:
    # A frozen server: nothing for 0.5 s, then the 500 held requests complete at once.
    found = recovery(series([(100, 0)] * 10 + [(0, 0)] * 5 + [(600, 0)] + [(100, 0)] * 5), 1.0)
    assert found.recovery_s == pytest.approx(0.5) and found.failed == 0
    assert found.after_ratio == pytest.approx(1.0)
