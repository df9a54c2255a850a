"""The shape of a job's rate against its size, on figures with known shapes — and the MIIS
paper's own staging figures, whose dip at 50,000 objects must be flagged."""

from __future__ import annotations

import pytest

from caplab.analysis.size_fit import fit_size


def test_a_power_law_is_recovered_exactly() -> None:
    points = [(n, 1000.0 * n**-0.3) for n in (10_000, 50_000, 100_000, 200_000)]
    fit = fit_size(points)
    assert fit is not None and fit.model == "power" and fit.trend == "falling"
    assert fit.params["k"] == pytest.approx(-0.3) and fit.params["c"] == pytest.approx(1000.0)
    assert fit.r2 == pytest.approx(1.0) and fit.against_trend == []


def test_a_straight_line_is_linear() -> None:
    fit = fit_size([(1.0, 100.0), (2.0, 90.0), (3.0, 80.0), (4.0, 70.0)])
    assert fit is not None and fit.model == "linear"
    assert fit.params["b"] == pytest.approx(-10.0) and fit.r2 == pytest.approx(1.0)


def test_the_papers_internal_staging_figures_have_a_point_against_the_trend() -> None:
    # Seed 001, internal disk: 91, 109, 45, 42, 39 objects/s at 10k, 50k, 100k, 200k, 500k.
    fit = fit_size([(10_000, 91), (50_000, 109), (100_000, 45), (200_000, 42), (500_000, 39)])
    assert fit is not None and fit.trend == "falling"
    assert fit.against_trend == [50_000]


def test_two_sizes_are_no_shape() -> None:
    assert fit_size([(1.0, 5.0), (2.0, 4.0)]) is None
