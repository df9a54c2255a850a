"""A late generator on a saturated machine is a measurement (the load is beyond the machine); a
late generator with cores to spare, or at its own limit, is not and must still stop a search."""

from __future__ import annotations

from caplab.analysis.generator import closed_loop_gap, crowded_out, generator_limit, generator_limited
from caplab.analysis.host_share import host_not_the_systems
from caplab.analysis.slo import Slo, parse_slo
from caplab.engine import GeneratorFigures


def figures(busiest: float, late_ms: float = 45.0) -> GeneratorFigures:
    return GeneratorFigures(
        threads=2,
        cpu_s=1.0,
        cpu_us_per_request=50.0,
        lateness_p99_ms=late_ms,
        lateness_max_ms=late_ms * 2,
        busiest_thread=busiest,
        connections_opened=8,
        saturated=True,
        saturation_reason="late",
    )


SYSTEM_BUSY = {
    "host": {"cpu_util_percent": 97.0, "cpu_percent": 194.0},
    "generator": {"cpu_percent": 20.0},
    "server": {"cpu_percent": 170.0},
}
"""A host the system's role took: 170 of its 194 busy points, caplab 20."""


def test_late_on_a_host_the_system_took_fails_the_trial_with_the_evidence() -> None:
    reason = crowded_out(figures(0.3), SYSTEM_BUSY, ["server"])
    assert reason is not None
    assert "host CPU at 97%" in reason and "45 ms late" in reason and "30%" in reason


def test_a_system_placed_on_cpus_of_its_own_cannot_crowd_the_generator_out() -> None:
    placed = SYSTEM_BUSY | {"server": {"cpu_percent": 170.0, "cpus": 1.0}}
    assert crowded_out(figures(0.3), placed, ["server"]) is None


def test_a_busy_host_is_never_the_systems_when_no_role_was_named() -> None:
    assert crowded_out(figures(0.3), SYSTEM_BUSY) is None


def test_a_busy_host_the_generator_shared_sizeably_is_the_generators_limit() -> None:
    """The issue's case: one server worker at 73 % of a core, caplab near a core of its own."""
    shared = {
        "host": {"cpu_util_percent": 96.0, "cpu_percent": 192.0},
        "generator": {"cpu_percent": 110.0},
        "server": {"cpu_percent": 73.0},
    }
    assert crowded_out(figures(0.6), shared, ["server"]) is None
    why = host_not_the_systems(192.0, 73.0, 110.0)
    assert why is not None and "57% of the host's busy CPU" in why
    assert host_not_the_systems(194.0, 170.0, 20.0) is None


def test_late_with_cores_to_spare_is_the_generators_problem() -> None:
    assert crowded_out(figures(0.3), SYSTEM_BUSY | {"host": {"cpu_util_percent": 60.0}}, ["server"]) is None


def test_a_generator_thread_at_its_limit_is_the_generators_problem_even_on_a_busy_host() -> None:
    assert crowded_out(figures(0.95), SYSTEM_BUSY, ["server"]) is None


def test_without_host_figures_nothing_is_assumed() -> None:
    assert crowded_out(figures(0.1), {}) is None


def test_a_host_busy_with_other_programs_is_not_the_system_crowding_the_generator() -> None:
    busy = {"host": {"cpu_util_percent": 98.0, "cpu_percent": 196.0}, "generator": {"cpu_percent": 20.0}}
    by_system = crowded_out(figures(0.3), busy | {"server": {"cpu_percent": 150.0}}, ["server"])
    by_others = crowded_out(figures(0.3), busy | {"server": {"cpu_percent": 30.0}}, ["server"])
    assert by_system is not None and "machine saturated" in by_system
    assert by_others is None, "146 of 196 busy points were neither the system nor caplab"


def slo(text: str) -> Slo:
    return parse_slo(text)


def test_a_failure_with_lateness_a_sizeable_share_of_the_bound_is_inconclusive() -> None:
    late = figures(0.3, late_ms=0.8)
    reason = generator_limited(late, [slo("p99<=2ms"), slo("errors<=1%")])
    assert reason is not None and "generator-limited" in reason and "40% of the p99<=2ms bound" in reason
    # The same lateness against a looser bound is noise; with no latency bound it decides nothing.
    assert generator_limited(late, [slo("p99<=50ms")]) is None
    assert generator_limited(late, [slo("errors<=1%")]) is None


def test_the_tightest_latency_bound_is_the_one_judged() -> None:
    reason = generator_limited(figures(0.3, late_ms=3.0), [slo("p99<=100ms"), slo("p50<=10ms")])
    assert reason is not None and "30% of the p50<=10ms bound" in reason


def test_a_generator_limit_is_a_floor_and_names_the_generator() -> None:
    limit = generator_limit(42_000.0, "/s", "sends ran late")
    assert limit["kind"] == "generator" and limit["resource"] == "generator"
    assert limit["summary"].startswith(
        "generator: capacity ≥ 42,000/s (the generator's limit here, not the system's)"
    )


def test_a_closed_loop_far_faster_at_the_same_concurrency_clears_the_system() -> None:
    reason = closed_loop_gap(42_000.0, 4, 189_000.0)
    assert reason is not None and "4.5× the open-loop capacity of 42,000/s" in reason
    assert "not the system's" in reason
    assert closed_loop_gap(42_000.0, 4, 45_000.0) is None, "the same system at the same concurrency"


def test_a_generator_its_cpu_quota_throttled_is_inconclusive_whatever_its_lateness() -> None:
    throttled = {"generator": {"throttled_percent": 35.0}}
    reason = generator_limited(figures(0.1, late_ms=0.01), [slo("p99<=2ms")], throttled)
    assert reason is not None and "throttled it in 35.0% of periods" in reason
    rare = {"generator": {"throttled_percent": 2.0}}
    assert generator_limited(figures(0.1, late_ms=0.01), [slo("p99<=2ms")], rare) is not None, (
        "stalls in 2 % of periods can make the slowest 1 %"
    )
    assert generator_limited(figures(0.1, late_ms=0.01), [slo("p50<=2ms")], rare) is None, "not a median"
    calm = {"generator": {"throttled_percent": 0.5}}
    assert generator_limited(figures(0.1, late_ms=0.01), [slo("p99<=2ms")], calm) is None
