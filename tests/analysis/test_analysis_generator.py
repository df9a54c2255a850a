"""A late generator on a saturated machine is a measurement (the load is beyond the machine); a
late generator with cores to spare, or at its own limit, is not and must still stop a search."""

from __future__ import annotations

from caplab.analysis.generator import crowded_out
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


def test_late_on_a_saturated_host_fails_the_trial_with_the_evidence() -> None:
    reason = crowded_out(figures(0.3), {"host": {"cpu_util_percent": 97.0}})
    assert reason is not None
    assert "host CPU at 97%" in reason and "45 ms late" in reason and "30%" in reason


def test_late_with_cores_to_spare_is_the_generators_problem() -> None:
    assert crowded_out(figures(0.3), {"host": {"cpu_util_percent": 60.0}}) is None


def test_a_generator_thread_at_its_limit_is_the_generators_problem_even_on_a_busy_host() -> None:
    assert crowded_out(figures(0.95), {"host": {"cpu_util_percent": 99.0}}) is None


def test_without_host_figures_nothing_is_assumed() -> None:
    assert crowded_out(figures(0.1), {}) is None
