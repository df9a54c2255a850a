"""Whether a scaling fit may be sized from: the judgement `caplab run` prints and the report
writes, made from the measured points, not only from R²."""

from __future__ import annotations

from typing import Any

from caplab.analysis.scaling import fit_quality, study_scaling


def scaling_over_hosts(capacities: list[float]) -> dict[str, Any]:
    cells = [
        {
            "index": i,
            "status": "complete",
            "factors": {"hosts": i + 1},
            "metrics": {"capacity": {"capacity_rps": x}},
        }
        for i, x in enumerate(capacities)
    ]
    [entry] = study_scaling({"cells": cells})
    return entry


def test_a_scale_out_that_keeps_to_its_law_can_be_sized_from() -> None:
    # Amdahl with λ = 1000/s and σ = 0.1, measured within 1 %.
    measured = [
        1000 * n / (1 + 0.1 * (n - 1)) * (1 + e) for n, e in zip(range(1, 7), [0.01, -0.01] * 3, strict=True)
    ]
    sound, why = fit_quality(scaling_over_hosts(measured))
    assert sound and why == ""


def test_a_peak_before_the_largest_configuration_is_named() -> None:
    sound, why = fit_quality(scaling_over_hosts([1199, 1797, 1580, 1398]))
    assert not sound
    assert "peaks at hosts = 2 (1,797/s) and falls to 1,398/s at 4" in why


def test_a_plateau_is_named_where_it_starts() -> None:
    sound, why = fit_quality(scaling_over_hosts([700, 1300, 1600, 1610]))
    assert not sound
    assert "stops growing at hosts = 3" in why
    # A plateau that dips within the noise still starts where the best was first reached.
    assert "stops growing at hosts = 2" in fit_quality(scaling_over_hosts([475, 749, 748, 736]))[1]


def test_a_factor_that_only_costs_throughput_is_not_a_resource() -> None:
    sound, why = fit_quality(scaling_over_hosts([1500, 1200, 900]))
    assert not sound
    assert "falls as hosts grows (1,500/s at 1 → 900/s at 3)" in why
