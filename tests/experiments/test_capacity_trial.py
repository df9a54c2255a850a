"""A search trial (TrialProber): the figures it judges, the SLOs it implies, and how it ends a search
when the generator saturates. Some trials run for real against the shared knownserver; others replay
a hand-made engine result and resource samples."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from caplab.analysis.slo import parse_slo
from caplab.collect import RoleSpec
from caplab.collect.base import ResourceSample
from caplab.engine import LoadSpec, Plan, build_plan
from caplab.experiments.base import TrialRecord
from caplab.experiments.capacity import trial as probe_module
from caplab.experiments.capacity.answer import FindSettings, find_capacity
from caplab.experiments.capacity.search import Probe, SearchOutcome
from caplab.experiments.capacity.trial import NO_BACKLOG, TrialLength, TrialProber
from caplab.systems.process import RunningServer
from support.capacity_probes import interval, run_result


def details(p: Probe) -> dict[str, Any]:
    """A trial's record beside its verdict, as the tests read it (their JSON values as set)."""
    return p.details


SHORT = TrialLength(1.0, 0.2)


def prober_for(
    url: str, *slos: str, closed: bool = False, roles: list[RoleSpec] | None = None
) -> TrialProber:
    return TrialProber(
        LoadSpec(url=url), [parse_slo(s) for s in slos], roles or [], SHORT, SHORT, closed=closed
    )


# --- implied SLOs ---------------------------------------------------------------------------------


def test_open_model_adds_the_no_backlog_slo_once() -> None:
    assert [s.text for s in prober_for("http://h/", "p99<=50ms").slos] == ["p99<=50ms", NO_BACKLOG]
    own = prober_for("http://h/", "p99<=50ms", "throughput>=0.95*offered")
    assert [s.text for s in own.slos] == ["p99<=50ms", "throughput>=0.95*offered"]
    assert [s.text for s in prober_for("http://h/", "p99<=50ms", closed=True).slos] == ["p99<=50ms"]


def test_trial_options_follow_the_phase_and_model() -> None:
    p = TrialProber(LoadSpec(url="http://h/"), [], [], TrialLength(1.5, 0.5), TrialLength(4.0, 1.0), False)
    short, full = p.load_spec(250.0, "bisect"), p.load_spec(250.0, "confirm")
    assert (short.rate, short.users, short.duration_s, short.warmup_s) == (250.0, None, 1.5, 0.5)
    assert (full.duration_s, full.warmup_s) == (4.0, 1.0)
    closed = TrialProber(LoadSpec(url="http://h/"), [], [], SHORT, SHORT, True).load_spec(7.0, "bracket")
    assert (closed.rate, closed.users) == (None, 7)


# --- real trials against the shared knownserver ----------------------------------------------------


@pytest.mark.slow
def test_a_trial_within_the_slo_passes_with_its_details(plain_server: RunningServer) -> None:
    prober = prober_for(f"http://{plain_server.address}/", "p99<=500ms", "errors<=0.1%")
    p = prober(200.0, "bracket")
    assert p.passed, p.reasons
    assert p.reasons == []
    assert p.throughput == pytest.approx(200.0, rel=0.02)
    assert p.p99_ms is not None
    d: dict[str, Any] = p.to_dict()
    for key in ("phase", "load", "passed", "reasons", "offered_rate", "sent", "verdicts", "consistency"):
        assert key in d, key
    assert [v["slo"] for v in d["verdicts"]] == ["p99<=500ms", "errors<=0.1%", NO_BACKLOG]
    # The generator's own lateness rides with every trial, flagged or not (find-capacity --json).
    assert d["lateness_p99_ms"] == prober.records[0][1].result.generator.lateness_p99_ms
    assert len(prober.records) == 1


@pytest.mark.slow
def test_a_low_rate_short_trial_is_not_failed_for_lack_of_samples(plain_server: RunningServer) -> None:
    p = prober_for(f"http://{plain_server.address}/", "p99<=1s")(40.0, "bisect")
    assert p.passed, p.reasons


@pytest.mark.slow
def test_generator_saturation_stops_the_search_without_a_capacity(
    plain_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine flags a trial saturated when its sends run late (Plan.saturation_lateness_ms,
    which neither the CLI nor LoadSpec expose); a limit of 1 ns makes every trial saturated."""

    def strict_plan(options: LoadSpec) -> Plan:
        return replace(build_plan(options), saturation_lateness_ms=1e-6)

    monkeypatch.setattr(probe_module, "build_plan", strict_plan)
    seen: list[Any] = []
    doc: dict[str, Any] = find_capacity(
        LoadSpec(url=f"http://{plain_server.address}/"),
        FindSettings(slos=("p99<=1s",), trial=SHORT, confirm=SHORT, repeats=1),
        roles=[],
        on_trial=lambda record, p: seen.append(p),
    ).to_dict()
    assert doc["found"] is False
    assert doc["generator_saturated"] is True
    assert doc["capacity_rps"] is None
    assert doc["ci95"] is None
    assert "the generator was the limit at 100" in doc["message"]
    assert "sends ran" in doc["message"], "the engine's reason is passed on"
    # One stall is repeated; a second at the same load stops the search. Both are kept, failed.
    assert [p.load for p in seen] == [100.0, 100.0]
    assert not any(p.passed for p in seen)
    assert all("generator fell behind" in p.reasons[-1] for p in seen)


@pytest.mark.slow
def test_a_single_generator_stall_is_repeated_and_the_search_goes_on(
    plain_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = 0

    def first_plan_strict(options: LoadSpec) -> Plan:
        nonlocal plans
        plans += 1
        plan = build_plan(options)
        return replace(plan, saturation_lateness_ms=1e-6) if plans == 1 else plan

    monkeypatch.setattr(probe_module, "build_plan", first_plan_strict)
    seen: list[Any] = []
    doc: dict[str, Any] = find_capacity(
        LoadSpec(url=f"http://{plain_server.address}/"),
        FindSettings(slos=("p99<=1s",), trial=SHORT, confirm=SHORT, repeats=1, maximum=200),
        roles=[],
        on_trial=lambda record, p: seen.append(p),
    ).to_dict()
    assert doc["generator_saturated"] is False
    assert seen[0].load == seen[1].load == 100.0
    assert not seen[0].passed and "generator fell behind" in seen[0].reasons[-1]
    assert seen[1].passed
    # The repeated attempt is not one of the search's own probes.
    assert doc["trials"][0]["load"] == 100.0
    assert len(doc["trials"]) == len(seen) - 1


# --- replayed trials: resource figures must come from the measured window ----------------------------


def replay(monkeypatch: pytest.MonkeyPatch, cpu_in_window: float, cpu_after: float) -> None:
    """Every trial: 400/s, 0.2 s warm-up + 1 s window in 0.2 s intervals, then the drain interval
    the engine reports after the window (nothing sent). The server's CPU is ``cpu_in_window`` % of a
    core in the window and ``cpu_after`` in the sample taken at the drain interval's end."""
    length = 0.2
    intervals = [interval(0, 400.0, warmup=True, length=length)]
    intervals += [interval(i, 400.0, length=length) for i in range(1, 6)]
    intervals += [interval(6, 0.0, length=length)]
    samples = []
    for iv in intervals:
        cpu = cpu_after if iv.index == 6 else cpu_in_window
        samples += [
            ResourceSample(iv.end_s, "role:server", "cpu_percent", cpu),
            ResourceSample(iv.end_s, "role:server", "max_thread_cpu_percent", cpu),
            ResourceSample(iv.end_s, "host", "cores", 2.0),
            ResourceSample(iv.end_s, "host", "cpu_percent", cpu + 10.0),
        ]
    result = run_result(400.0, intervals, duration_s=1.0, warmup_s=length)

    def fake_run_trial(plan: Plan, collectors: Any, progress: Any = None, runner: Any = None) -> TrialRecord:
        return TrialRecord(result, list(samples))

    monkeypatch.setattr(probe_module, "run_trial", fake_run_trial)


def test_replayed_trial_without_a_drain_sample_reads_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    replay(monkeypatch, cpu_in_window=85.0, cpu_after=85.0)
    p = prober_for("http://h/", "cpu[server]<=80%", roles=[RoleSpec("server", pid=1)])(400.0, "bisect")
    assert details(p)["resources"]["server"]["cpu_percent"] == pytest.approx(85.0)
    assert details(p)["busiest"] == {"resource": "cpu:server", "utilization": pytest.approx(0.85)}
    assert not p.passed
    assert "cpu[server]<=80%: 85% fails <= 80%" in p.reasons


def test_resources_exclude_the_sample_after_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    replay(monkeypatch, cpu_in_window=85.0, cpu_after=0.0)
    prober = prober_for("http://h/", "cpu[server]<=80%", roles=[RoleSpec("server", pid=1)])
    p = prober(400.0, "bisect")
    assert details(p)["resources"]["server"]["cpu_percent"] == pytest.approx(85.0)
    assert details(p)["busiest"]["utilization"] == pytest.approx(0.85)
    assert not p.passed, "the server was 85 % busy: cpu[server]<=80% fails"


def test_limit_at_capacity_excludes_the_samples_after_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    replay(monkeypatch, cpu_in_window=98.0, cpu_after=0.0)
    prober = prober_for("http://h/", "p99<=1s", roles=[RoleSpec("server", pid=1)])
    confirmations = [prober(400.0, "confirm") for _ in range(2)]
    outcome = SearchOutcome(400.0, (390.0, 420.0), 400.0, confirmations, 1.0, True, "test", confirmations)
    limit = prober.analyse(outcome).limit
    assert limit is not None
    assert limit["utilization"] == pytest.approx(0.98)
    assert limit["kind"] == "hardware"
