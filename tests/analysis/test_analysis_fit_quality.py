"""Whether a scaling fit may be sized from: the judgement `caplab run` prints and the report
writes, made from the measured points, not only from R²."""

from __future__ import annotations

from typing import Any

import pytest

from caplab.analysis.scaling import fit_quality, study_scaling
from caplab.cli.progress import scaling_line


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


@pytest.mark.slow
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


def test_a_fit_that_does_not_fit_is_no_model_and_predicts_nothing() -> None:
    """The quick demo's scale-out: a linear law with R² −4.71 was once reported, and 8 hosts
    extrapolated to 7,549/s. The judgement is made once, in the analysis: no fit, the rejected law
    kept only as a candidate without predictions, the measured peak, the reason with its figures."""
    entry = scaling_over_hosts([2000, 2960, 2800, 2800])
    assert entry["fit"] is None
    assert entry["peak"] == {"n": 2.0, "throughput": 2960.0}
    assert entry["note"].startswith("no model fits — ")
    assert "R² -4.71, under the 0.8 a model needs" in entry["note"]
    assert "held out, the largest hosts is predicted 73% off" in entry["note"]
    assert "predictions" not in entry["candidate"]
    line = scaling_line(entry)
    assert "no model fits" in line and "measured peak 2,960/s at hosts=2, nothing extrapolated" in line
    assert "λ" not in line and "R² -4.71" in line


def test_a_fit_that_fits_keeps_its_model_and_its_predictions() -> None:
    entry = scaling_over_hosts([1000, 1950, 2900, 3800])
    assert entry["fit"] is not None and "candidate" not in entry
    assert max(p["n"] for p in entry["fit"]["predictions"]) == 8.0
    assert entry["peak"] == {"n": 4.0, "throughput": 3800.0}
    assert "λ=" in scaling_line(entry)


def test_a_failover_studys_throughput_is_no_scaling_series() -> None:
    metrics: list[dict[str, Any]] = [
        {"achieved_rps": 40.0 - ttl / 2, "failover": [{"trial": 0, "action": "kill-primary"}]}
        for ttl in (10, 20, 30)
    ]
    cells = [
        {"index": i, "status": "complete", "factors": {"ttl": ttl}, "metrics": m}
        for i, (ttl, m) in enumerate(zip((10, 20, 30), metrics, strict=True))
    ]
    assert study_scaling({"cells": cells}) == [], "throughput that falls with a longer outage is not a law"
    for m in metrics:
        m.pop("failover")
    assert len(study_scaling({"cells": cells})) == 1, "the same cells without failovers are a series"
