"""Steady state and consistency from interval series: a trend rejects a trial, flat noise does not;
warm-up, the drain after the window and a short last interval are left out; Little's law."""

from __future__ import annotations

import random

import pytest

from caplab.analysis.steady import littles_law, measured, rate, steadiness
from support.capacity_probes import interval, series


def noisy(mean: float, cv: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [mean * (1 + rng.gauss(0, cv)) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_flat_noisy_throughput_is_steady_and_good(seed: int) -> None:
    s = steadiness(series(noisy(1000.0, 0.02, 20, seed)))
    assert s.steady, s.reason
    assert s.reason == "steady"
    assert s.consistency == "good"
    assert s.throughput_cv < 0.05
    assert abs(s.throughput_trend) < 0.10


def test_rising_throughput_against_a_constant_schedule_is_a_trend() -> None:
    s = steadiness(series([100.0 + 3 * i for i in range(10)], sends=113.5))
    assert not s.steady
    assert s.throughput_trend > 0.10
    assert "throughput trends +" in s.reason and "beyond its sends'" in s.reason


def test_falling_throughput_against_a_constant_schedule_is_a_trend() -> None:
    s = steadiness(series([200.0 - 8 * i for i in range(10)], sends=200.0))
    assert not s.steady
    assert s.throughput_trend < -0.10


def test_throughput_that_follows_its_poisson_sends_is_steady() -> None:
    """One realisation of Poisson arrivals rose 15 % across the window (seen in a capacity search,
    whose confirmations all failed on it): the system completed what was sent, interval by interval."""
    sends = [300.0 + 5 * i + (7 if i % 3 == 0 else -4) for i in range(12)]
    s = steadiness(series(sends, sends=sends))
    assert s.throughput_trend > 0.10
    assert s.steady, s.reason


def test_closed_users_who_mostly_think_send_the_loads_own_trend() -> None:
    rising = [30.0 + 0.5 * i for i in range(12)]
    thinking = steadiness(series(rising, sends=rising, in_flight=2), users=2000)
    assert thinking.steady, thinking.reason


def test_closed_users_who_mostly_wait_echo_the_system_so_their_trend_is_its() -> None:
    """Users always waiting on a reply send when it comes: the sends fall with the throughput, and
    that fall is the system's (sends and completions alike would hide it)."""
    falling = [200.0 - 8 * i for i in range(10)]
    waiting = steadiness(series(falling, sends=falling, in_flight=50), users=50)
    assert not waiting.steady
    assert "throughput trends -" in waiting.reason


def test_a_growing_queue_is_not_steady_even_at_the_offered_rate() -> None:
    """Throughput keeps up with the rate while the median latency climbs: the queue is growing."""
    s = steadiness(series([500.0] * 10, p50s=[10.0 + 10 * i for i in range(10)]))
    assert not s.steady
    assert s.latency_trend > 0.5
    assert "a queue is growing" in s.reason


def test_a_small_absolute_latency_wobble_is_not_a_queue() -> None:
    """1 → 2 ms doubles the median but is noise, not a queue."""
    s = steadiness(series([500.0] * 10, p50s=[1.0 + i / 9 for i in range(10)]))
    assert s.steady, s.reason
    assert s.latency_trend > 0.5


def test_falling_latency_is_not_a_queue() -> None:
    s = steadiness(series([500.0] * 10, p50s=[50.0 - 4 * i for i in range(10)]))
    assert s.steady, s.reason


@pytest.mark.parametrize(
    ("throughputs", "rating"),
    [
        ([100.0, 102.0, 98.0, 100.0, 101.0, 99.0], "good"),
        ([90.0, 110.0, 110.0, 90.0, 90.0, 110.0, 110.0, 90.0], "fair"),  # cv ≈ 0.11, no trend
        ([70.0, 130.0, 130.0, 70.0, 70.0, 130.0, 130.0, 70.0], "poor"),  # cv ≈ 0.32, no trend
    ],
)
def test_consistency_is_rated_from_the_variation(throughputs: list[float], rating: str) -> None:
    s = steadiness(series(throughputs))
    assert s.steady, "a symmetric wobble has no trend"
    assert s.consistency == rating


def test_rating_thresholds() -> None:
    assert [rate(x) for x in (0.0, 0.049, 0.05, 0.149, 0.15, 1.0)] == [
        "good",
        "good",
        "fair",
        "fair",
        "poor",
        "poor",
    ]


def test_too_few_intervals_are_not_judged() -> None:
    s = steadiness(series([100.0, 300.0]))
    assert s.steady
    assert "too few intervals" in s.reason


def test_warmup_drain_and_a_short_last_interval_are_left_out() -> None:
    """A slow warm-up, the drain after the window (nothing sent, a few replies) and a short final
    interval would read as a trend; only whole intervals inside the window count."""
    warm = [interval(i, 50.0, warmup=True, length=0.5) for i in range(2)]
    window = [interval(i, 400.0, length=0.5) for i in range(2, 8)]
    drain = [interval(8, 8.0, length=0.5)]
    assert measured([*warm, *window, *drain], window_end_s=4.0) == window
    s = steadiness([*warm, *window, *drain], window_end_s=4.0)
    assert s.steady, s.reason
    short_last = interval(0, 40.0, start=4.0, length=0.1)
    assert measured([*window, short_last]) == window


def test_littles_law_holds_and_fails() -> None:
    window = [interval(i, 100.0, in_flight=5) for i in range(5)]
    ok = littles_law(100.0, 50.0, window, window_end_s=5.0)
    assert ok == {"checked": True, "in_flight": 5.0, "expected": pytest.approx(5.0), "holds": True}
    off = littles_law(100.0, 500.0, window, window_end_s=5.0)
    assert off["checked"] and not off["holds"]
    assert littles_law(100.0, None, window, window_end_s=5.0) == {"checked": False}
