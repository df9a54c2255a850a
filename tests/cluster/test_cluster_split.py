"""Dividing a plan among agents and agreeing on a start: plain functions, no Ray."""

from __future__ import annotations

import pytest

from caplab import engine
from caplab.cluster.clock import ClockReading, agreed_start
from caplab.cluster.split import shares, split_plan
from caplab.engine import ClosedLoad, LoadSpec, OpenLoad, Think, UsageProblem

URL = "http://127.0.0.1:8080/"


def test_an_open_plan_gives_each_agent_its_share_of_every_segment() -> None:
    plan = engine.build_plan(LoadSpec(URL, steps=((300.0, 2.0), (600.0, 3.0)), seed=7))
    parts = split_plan(plan, 3)
    assert len(parts) == 3
    for part in parts:
        assert isinstance(part.load, OpenLoad)
        assert [(s.duration_s, s.rate_start, s.rate_end) for s in part.load.profile] == [
            (2.0, 100.0, 100.0),
            (3.0, 200.0, 200.0),
        ]
        assert part.duration_s == plan.duration_s
        assert part.target == plan.target


def test_a_ramp_is_divided_at_both_ends() -> None:
    plan = engine.build_plan(LoadSpec(URL, rate=100, ramp_to=500, duration_s=4))
    (a, b) = split_plan(plan, 2)
    assert isinstance(a.load, OpenLoad)
    assert (a.load.profile[0].rate_start, a.load.profile[0].rate_end) == (50.0, 250.0)
    assert a.load == b.load


def test_closed_users_are_divided_with_the_remainder_spread() -> None:
    plan = engine.build_plan(LoadSpec(URL, users=10, think_s=0.1, think_dist="exponential"))
    parts = split_plan(plan, 3)
    loads = [p.load for p in parts]
    assert all(isinstance(load, ClosedLoad) for load in loads)
    assert [load.users for load in loads if isinstance(load, ClosedLoad)] == [4, 3, 3]
    assert all(isinstance(load, ClosedLoad) and load.think == Think("exponential", 0.1) for load in loads)


def test_every_agent_has_its_own_seed_reproducibly() -> None:
    plan = engine.build_plan(LoadSpec(URL, rate=100, schedule="poisson", seed=42))
    seeds = [p.seed for p in split_plan(plan, 4)]
    assert len(set(seeds)) == 4
    assert seeds == [p.seed for p in split_plan(plan, 4)]
    assert all(0 <= s < 1 << 64 for s in seeds)


def test_limits_are_divided_so_that_they_still_add_up() -> None:
    plan = engine.build_plan(LoadSpec(URL, rate=100, max_requests=1001, connections=5))
    parts = split_plan(plan, 2)
    assert sum(p.max_requests or 0 for p in parts) == 1001
    assert [p.max_in_flight for p in parts] == [3, 3]


def test_shares_add_up_to_the_total() -> None:
    assert shares(7, 3) == [3, 2, 2]
    assert sum(shares(1000, 7)) == 1000


@pytest.mark.parametrize(
    ("spec", "agents", "message"),
    [
        (LoadSpec(URL, rate=100), 0, "--agents must be at least 1, not 0"),
        (LoadSpec(URL, users=3), 4, "3 users cannot be split among 4 agents"),
    ],
)
def test_a_plan_that_cannot_be_divided_is_a_usage_problem(spec: LoadSpec, agents: int, message: str) -> None:
    with pytest.raises(UsageProblem, match=message):
        split_plan(engine.build_plan(spec), agents)


def test_a_clock_offset_is_read_at_the_middle_of_the_round_trip() -> None:
    reading = ClockReading.measure(sent_at=100.0, agent_time=100.51, received_at=100.02)
    assert reading.offset_s == pytest.approx(0.5)
    assert reading.round_trip_s == pytest.approx(0.02)
    assert reading.to_agent(200.0) == pytest.approx(200.5)


def test_the_agreed_start_leaves_room_for_the_slowest_round_trip() -> None:
    readings = [ClockReading(0.0, 0.01), ClockReading(-3.0, 0.2)]
    assert agreed_start(1000.0, readings, lead_s=1.0) == pytest.approx(1001.4)
    assert agreed_start(1000.0, [], lead_s=0.5) == pytest.approx(1000.5)
