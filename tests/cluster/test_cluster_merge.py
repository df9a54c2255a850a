"""Merging agents' results, and the plain agent: real engine runs against knownserver, no Ray."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from caplab import engine
from caplab.cluster.agent import Agent
from caplab.cluster.merge import merge_generators, merge_intervals, merge_latency, merge_results
from caplab.engine import LoadSpec, RunResult
from caplab.systems.process import RunningServer, start_module


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as running:
        yield running


@pytest.fixture(scope="module")
def two_results(server: RunningServer) -> list[tuple[str, RunResult]]:
    url = f"http://{server.host}:{server.port}/"
    a = engine.run(engine.build_plan(LoadSpec(url, rate=200, duration_s=1.0, interval_s=0.25)))
    b = engine.run(engine.build_plan(LoadSpec(url, rate=300, duration_s=1.5, interval_s=0.25, seed=1)))
    return [("agent-1", a), ("agent-2", b)]


@pytest.mark.slow
def test_counts_add_and_histograms_merge(two_results: list[tuple[str, RunResult]]) -> None:
    (_, a), (_, b) = two_results
    merged = merge_results(two_results)
    assert merged.sent == a.sent + b.sent
    assert merged.completed == a.completed + b.completed
    assert merged.offered_rate == pytest.approx(500.0)
    assert merged.throughput == pytest.approx(a.throughput + b.throughput)
    assert merged.latency_ms.count == a.latency_ms.count + b.latency_ms.count
    assert engine.summarize_histogram(merged.latency_hdr).count == merged.latency_ms.count
    assert merged.service_time_ms.count == a.service_time_ms.count + b.service_time_ms.count
    low, high = sorted([a.latency_ms.p50 or 0.0, b.latency_ms.p50 or 0.0])
    assert merged.latency_ms.p50 is not None and low <= merged.latency_ms.p50 <= high
    assert merged.latency_ms.max == max(a.latency_ms.max or 0.0, b.latency_ms.max or 0.0)
    (cls,) = merged.raw["classes"]
    assert cls["completed"] == merged.completed
    assert cls["latency_ms"]["count"] == merged.latency_ms.count


def test_intervals_merge_by_index_including_the_longer_agents_tail(
    two_results: list[tuple[str, RunResult]],
) -> None:
    (_, a), (_, b) = two_results
    merged = merge_results(two_results)
    assert len(merged.intervals) == max(len(a.intervals), len(b.intervals))
    for i, interval in enumerate(merged.intervals):
        parts = [r.intervals[i] for r in (a, b) if i < len(r.intervals)]
        assert interval.index == i
        assert interval.sent == sum(p.sent for p in parts)
        assert interval.latency_ms.count == sum(p.latency_ms.count for p in parts)


def test_an_intervals_percentiles_are_the_highest_seen_and_its_mean_weighted() -> None:
    def summary(count: int, mean: float | None, p50: float | None) -> dict[str, Any]:
        return {
            "count": count,
            "min": p50,
            "mean": mean,
            "p50": p50,
            "p90": p50,
            "p99": p50,
            "p999": None,
            "max": p50,
        }

    merged = merge_latency([summary(1, 1.0, 1.0), summary(3, 3.0, 3.0), summary(0, None, None)])
    assert merged["count"] == 4
    assert merged["mean"] == pytest.approx(2.5)
    assert (merged["min"], merged["p50"], merged["max"], merged["p999"]) == (1.0, 3.0, 3.0, None)


def test_errors_by_kind_add(two_results: list[tuple[str, RunResult]]) -> None:
    (_, a), (_, b) = two_results
    with_errors = [
        ("agent-1", RunResult.from_json(_with(a.raw, errors_by_kind={"timeout": 2, "http:503": 1}))),
        ("agent-2", RunResult.from_json(_with(b.raw, errors_by_kind={"timeout": 5}))),
    ]
    assert merge_results(with_errors).errors_by_kind == {"timeout": 7, "http:503": 1}


def test_one_saturated_agent_saturates_the_run_and_is_named(two_results: list[tuple[str, RunResult]]) -> None:
    (_, a), (_, b) = two_results
    # The two runs' own verdicts set aside: on a busy machine either may have fallen behind itself.
    cool = {**a.raw["generator"], "saturated": False, "saturation_reason": None}
    hot = {**b.raw["generator"], "saturated": True, "saturation_reason": "lateness p99 35 ms"}
    merged = merge_generators([("agent-1", cool), ("agent-2", hot)])
    assert merged["saturated"] is True
    assert merged["saturation_reason"] == "agent-2: lateness p99 35 ms"
    assert merged["threads"] == a.generator.threads + b.generator.threads
    assert merged["cpu_s"] == pytest.approx(a.generator.cpu_s + b.generator.cpu_s)
    assert merged["held_rate"] == pytest.approx((a.generator.held_rate or 0) + (b.generator.held_rate or 0))
    calm = merge_generators(
        [("agent-1", cool), ("agent-2", {**hot, "saturated": False, "saturation_reason": None})]
    )
    assert (calm["saturated"], calm["saturation_reason"]) == (False, None)


def test_intervals_only_some_agents_reached_merge_what_they_have() -> None:
    def interval(index: int, sent: int) -> dict[str, Any]:
        latency = {"count": 0, "min": None, "mean": None, "p50": None, "p90": None, "p99": None, "p999": None}
        return {"index": index, "start_s": index, "end_s": index + 1, "warmup": False, "sent": sent,
                "completed": sent, "errors": 0, "dropped": 0, "in_flight": 0, "throughput": sent,
                "latency_ms": {**latency, "max": None}}  # fmt: skip

    merged = merge_intervals([[interval(0, 10), interval(1, 10)], [interval(0, 5)]])
    assert [m["sent"] for m in merged] == [15, 10]


def test_an_agent_waits_for_the_start_reports_progress_and_stops_when_told(server: RunningServer) -> None:
    url = f"http://{server.host}:{server.port}/"
    plan = engine.build_plan(LoadSpec(url, rate=100, duration_s=30.0, interval_s=0.2))
    agent = Agent("agent-1")
    answers = []
    start_at = agent.clock() + 0.3
    runner = threading.Thread(target=lambda: answers.append(agent.run(plan, start_at)))
    runner.start()
    while len(agent.progress(0)) < 2:
        time.sleep(0.05)
    assert agent.progress(1)[0]["index"] == 1
    agent.stop()
    runner.join(timeout=10)
    (answer,) = answers
    assert answer.failure is None and answer.raw is not None
    assert answer.start_late_s is not None and answer.start_late_s >= 0
    result = RunResult.from_json(answer.raw)
    assert result.interrupted
    assert result.sent > 0


def test_an_agent_stopped_before_its_start_says_so(server: RunningServer) -> None:
    agent = Agent("agent-2")
    agent.stop()
    plan = engine.build_plan(LoadSpec(f"http://{server.host}:{server.port}/", rate=10))
    answer = agent.run(plan, agent.clock() + 60)
    assert (answer.raw, answer.failure) == (None, "stopped before the start")


def test_an_agent_names_a_target_it_cannot_reach(closed_port: int) -> None:
    plan = engine.build_plan(LoadSpec(f"http://127.0.0.1:{closed_port}/", rate=10, duration_s=1))
    answer = Agent("agent-3").run(plan, 0.0)
    assert answer.raw is None
    assert answer.failure is not None and "TargetUnreachable" in answer.failure


def _with(raw: dict[str, Any], **changes: Any) -> str:
    return json.dumps({**raw, **changes})
