"""The one straight-line fit (analysis/line_fit.py) against SciPy's: the trend finding's slope
interval, a steady window's drift test and a job's rate against size all rest on it."""

from __future__ import annotations

import pytest
from scipy import stats

from caplab.analysis.finding_trend import slope_interval
from caplab.analysis.line_fit import fit_line

XS = [1.0, 2.0, 4.0, 8.0, 8.0, 16.0]
YS = [950.0, 1010.0, 870.0, 800.0, 760.0, 610.0]


def test_the_fit_and_its_slope_error_are_scipys() -> None:
    line = fit_line(XS, YS)
    reference = stats.linregress(XS, YS)
    assert line is not None and line.slope_stderr is not None
    assert line.slope == pytest.approx(reference.slope)
    assert line.intercept == pytest.approx(reference.intercept)
    assert line.slope_stderr == pytest.approx(reference.stderr)


def test_a_trends_interval_is_the_slope_plus_or_minus_students_t_times_its_error() -> None:
    estimate = slope_interval(list(zip(XS, YS, strict=True)))
    reference = stats.linregress(XS, YS)
    half = stats.t.ppf(0.975, len(XS) - 2) * reference.stderr
    assert estimate is not None
    assert estimate.low == pytest.approx(reference.slope - half, rel=1e-3)
    assert estimate.high == pytest.approx(reference.slope + half, rel=1e-3)


def test_no_line_through_a_single_x_and_no_error_from_two_points() -> None:
    assert fit_line([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]) is None
    two = fit_line([1.0, 2.0], [1.0, 3.0])
    assert two is not None and two.slope == pytest.approx(2.0) and two.slope_stderr is None
