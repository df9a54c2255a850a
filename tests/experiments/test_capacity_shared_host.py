"""A capacity search whose only bottleneck is the host the generator shares with a cheap server
must report the generator's limit — "capacity ≥ X/s (the generator's limit here)" — never
``cpu:host (hardware)``.

The machine is replayed, not raced: two cores; the server costs 10 µs of CPU per request on one
thread, the generator (caplab and its daemons) 15 µs, so the host's cores fill at 80,000/s while the
server's own thread is at 80 % — a bigger server would not have helped. Past that the trial fails
its p99 (and, where the engine notices, its sends run late). A replay makes the verdict
independent of how fast this machine is; the rule it checks is `host_not_the_systems`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from caplab.collect import RoleSpec
from caplab.collect.base import ResourceSample
from caplab.engine import GeneratorFigures, LoadSpec, OpenLoad, Plan
from caplab.experiments.base import TrialRecord
from caplab.experiments.capacity import trial as probe_module
from caplab.experiments.capacity.answer import FindSettings, find_capacity
from caplab.experiments.capacity.trial import TrialLength
from support.capacity_probes import interval, latency, run_result

CORES = 2.0
SERVER_US = 10.0
GENERATOR_US = 15.0
HOST_FULL = CORES * 1e6 / (SERVER_US + GENERATOR_US)  # 80,000/s


def machine(late_sends: bool) -> Any:
    """``run_trial`` on the replayed machine: what a trial at the plan's rate would measure."""

    def run_trial(plan: Plan, collectors: Any, progress: Any = None, runner: Any = None) -> TrialRecord:
        assert isinstance(plan.load, OpenLoad)
        offered = plan.load.profile[-1].rate_end
        carried = min(offered, HOST_FULL)
        over = offered > 0.97 * HOST_FULL
        length = 0.5
        intervals = [interval(0, carried, warmup=True, length=length)]
        intervals += [interval(i, carried, length=length, sent_rate=offered) for i in range(1, 5)]
        result = run_result(offered, intervals, duration_s=2.0, warmup_s=length)
        p99 = 40.0 if over else 2.0
        result = replace(result, latency_ms=latency(1.0, p99, result.sent), service_time_ms=latency(1.0, p99))
        if over and late_sends:
            late = GeneratorFigures(2, 1.0, GENERATOR_US, 30.0, 60.0, 0.6, 64, True, "late")
            result = replace(result, generator=late)
        server = carried * SERVER_US / 1e4  # % of one core
        own = carried * GENERATOR_US / 1e4
        samples = []
        for iv in intervals:
            samples += [
                ResourceSample(iv.end_s, "role:server", "cpu_percent", server),
                ResourceSample(iv.end_s, "role:server", "max_thread_cpu_percent", server),
                ResourceSample(iv.end_s, "generator", "cpu_percent", own),
                ResourceSample(iv.end_s, "host", "cores", CORES),
                ResourceSample(iv.end_s, "host", "cpu_percent", server + own),
                ResourceSample(iv.end_s, "host", "cpu_util_percent", (server + own) / CORES),
            ]
        return TrialRecord(result, samples)

    return run_trial


@pytest.mark.parametrize("late_sends", [False, True], ids=["host-full", "host-full-and-late"])
def test_a_host_the_generator_shares_is_the_generators_limit_not_cpu_host(
    monkeypatch: pytest.MonkeyPatch, late_sends: bool
) -> None:
    monkeypatch.setattr(probe_module, "run_trial", machine(late_sends))
    settings = FindSettings(
        slos=("p99<=10ms",),
        precision=0.05,
        start=10_000.0,
        maximum=200_000.0,
        trial=TrialLength(2.0, 0.5),
        confirm=TrialLength(2.0, 0.5),
        repeats=1,
    )
    answer = find_capacity(LoadSpec(url="http://h/"), settings, [RoleSpec("server", pid=1)])
    doc = answer.to_dict()
    assert answer.generator_saturated and not answer.found, doc["message"]
    assert answer.capacity_rps is None
    floor = answer.capacity_at_least
    # Where it stops (the bracket's doubling, or the bisection) does not matter; that the highest
    # load that passed is a floor, and the generator the limit, does.
    assert floor is not None and HOST_FULL / 2 <= floor <= HOST_FULL, floor
    assert str(doc["message"]).startswith(f"capacity ≥ {floor:,.0f}/s (the generator's limit here)"), doc[
        "message"
    ]
    assert answer.limit is not None and answer.limit["kind"] == "generator"
    assert "cpu:host" not in answer.limit["summary"] and "hardware" not in answer.limit["summary"]
