"""Load agents on a real Ray started on this machine: the split load adds up, the merged result
matches one engine's, and an agent killed mid-run is named while the others' figures are kept."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import psutil
import pytest

from caplab import engine
from caplab.cluster import ray_agents
from caplab.engine import IntervalSnapshot, LoadSpec
from caplab.systems.process import start_module

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[ray_agents.Cluster]:
    with ray_agents.connect(ray_agents.LOCAL) as connected:
        yield connected


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as server:
        yield f"http://{server.host}:{server.port}/"


def test_two_agents_at_1000_each_carry_2000_and_merge_exactly(cluster: ray_agents.Cluster, url: str) -> None:
    plan = engine.build_plan(LoadSpec(url, rate=2000, duration_s=5.0, warmup_s=1.0, interval_s=0.5))
    single = engine.run(plan)
    progress: list[IntervalSnapshot] = []
    outcome = ray_agents.run_on_agents(cluster, plan, 2, progress.append)
    assert outcome.failures == ()
    merged = outcome.result
    assert merged is not None
    parts = [a.result for a in outcome.agents if a.result is not None]
    assert [p.offered_rate for p in parts] == [1000.0, 1000.0]
    assert merged.throughput == pytest.approx(2000.0, rel=0.02)
    assert merged.latency_ms.count == sum(p.latency_ms.count for p in parts)
    assert engine.summarize_histogram(merged.latency_hdr).count == merged.latency_ms.count
    assert merged.completed == sum(p.completed for p in parts)
    single_p50, merged_p50 = single.latency_ms.p50, merged.latency_ms.p50
    assert single_p50 is not None and merged_p50 is not None
    assert merged_p50 <= 1.5 * single_p50 + 0.1, (merged_p50, single_p50)
    assert [s.index for s in progress] == [i.index for i in merged.intervals]
    assert [s.sent for s in progress] == [i.sent for i in merged.intervals]
    for report in outcome.agents:
        assert report.clock is not None and report.start_late_s is not None
        assert abs(report.clock.offset_s) <= report.clock.round_trip_s  # one machine: one clock


def test_an_agent_killed_mid_run_is_named_and_the_others_figures_kept(
    cluster: ray_agents.Cluster, url: str
) -> None:
    plan = engine.build_plan(LoadSpec(url, rate=400, duration_s=4.0, interval_s=0.5))
    killed: list[int] = []

    def kill_one_agent(s: IntervalSnapshot) -> None:
        if s.index == 1 and not killed:
            (pid, *_) = agent_pids()
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    outcome = ray_agents.run_on_agents(cluster, plan, 2, kill_one_agent)
    assert len(killed) == 1
    (dead,) = outcome.failures
    assert dead.identity is not None and dead.identity.pid == killed[0]
    assert dead.failure is not None and dead.failure.startswith("died")
    assert dead.result is None
    (survivor,) = [a for a in outcome.agents if a is not dead]
    assert survivor.result is not None and survivor.failure is None
    assert outcome.result is not None
    assert outcome.result.sent == survivor.result.sent
    assert survivor.result.sent == pytest.approx(200 * 4.0, rel=0.05)


def agent_pids() -> list[int]:
    """The processes running an agent's methods: Ray names them ``ray::Agent…``."""
    return [
        p.pid
        for p in psutil.Process().children(recursive=True)
        if " ".join(p.cmdline()).startswith("ray::Agent")
    ]


def test_a_pools_agents_serve_run_after_run_and_one_lost_is_replaced(
    cluster: ray_agents.Cluster, url: str
) -> None:
    """A search's trials run on the same agents (a new actor is a new process importing caplab),
    each run with only its own intervals; after a run that lost an agent, the next gets new ones."""
    plan = engine.build_plan(LoadSpec(url, rate=200, duration_s=1.0, interval_s=0.5))
    pool = ray_agents.AgentPool(cluster)
    try:
        first = ray_agents.run_on_agents(cluster, plan, 2, pool=pool)
        progress: list[IntervalSnapshot] = []
        second = ray_agents.run_on_agents(cluster, plan, 2, progress.append, pool)
        assert first.failures == second.failures == ()
        assert pids(second) == pids(first)
        assert second.result is not None
        assert second.result.sent == pytest.approx(200 * 1.0, rel=0.05)
        assert [s.index for s in progress] == [i.index for i in second.result.intervals]
        assert [s.sent for s in progress] == [i.sent for i in second.result.intervals]

        def kill_one_agent(s: IntervalSnapshot) -> None:
            if s.index == 0 and not lost:
                lost.append(pids(second)[0])
                os.kill(lost[0], signal.SIGKILL)

        lost: list[int] = []
        third = ray_agents.run_on_agents(cluster, plan, 2, kill_one_agent, pool)
        assert [a.identity.pid for a in third.failures if a.identity] == lost
        fourth = ray_agents.run_on_agents(cluster, plan, 2, pool=pool)
        assert fourth.failures == ()
        assert set(pids(fourth)).isdisjoint(pids(second))
    finally:
        pool.discard()


def pids(outcome: ray_agents.ClusterRun) -> list[int]:
    return [a.identity.pid for a in outcome.agents if a.identity is not None]
