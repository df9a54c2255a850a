"""USL fits on synthetic data with known λ, σ, κ and multiplicative noise: the estimates and their
intervals recover the truth over several seeds, the simplest adequate model is chosen, the peak
follows from the parameters, and `caplab fit-usl` answers in JSON or exits 2 naming the bad row."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from caplab.analysis.usl import UslFit, fit_usl, usl

N = [1, 2, 4, 8, 16, 32]
REPEATS = 3
SEEDS = range(10)


@dataclass(frozen=True)
class Truth:
    lam: float
    sigma: float
    kappa: float
    noise: float
    """Standard deviation of the multiplicative noise (0.03: 3 %)."""

    @property
    def peak_n(self) -> float:
        return math.sqrt((1 - self.sigma) / self.kappa)

    def sample(self, seed: int, ns: list[int] = N) -> tuple[list[float], list[float]]:
        rng = np.random.default_rng(seed)
        n = np.repeat(np.array(ns, dtype=np.float64), REPEATS)
        x = usl(n, self.lam, self.sigma, self.kappa) * (1 + rng.normal(0, self.noise, n.size))
        return n.tolist(), x.tolist()


SCENARIOS = {
    "3%": Truth(lam=100.0, sigma=0.05, kappa=0.001, noise=0.03),
    "5%": Truth(lam=50.0, sigma=0.02, kappa=0.002, noise=0.05),
}


@pytest.fixture(scope="module")
def fits() -> dict[str, list[UslFit]]:
    """Ten seeded fits per scenario (each bootstraps 400 refits, so they are computed once)."""
    return {name: [fit_usl(*t.sample(seed), seed=seed) for seed in SEEDS] for name, t in SCENARIOS.items()}


def covered(fits: list[UslFit], name: str, true: float) -> int:
    return sum(f.ci[name][0] <= true <= f.ci[name][1] for f in fits)


# --- recovery -------------------------------------------------------------------------------------


def test_noise_free_data_is_recovered_exactly() -> None:
    t = Truth(lam=100.0, sigma=0.05, kappa=0.001, noise=0.0)
    f = fit_usl(*t.sample(0))
    assert f.model == "usl"
    assert (f.lam, f.sigma, f.kappa) == pytest.approx((100.0, 0.05, 0.001), rel=1e-4)
    assert f.r2 == pytest.approx(1.0)
    assert f.peak_n == pytest.approx(t.peak_n, rel=1e-3)


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_estimates_recover_the_truth_in_most_seeds(fits: dict[str, list[UslFit]], scenario: str) -> None:
    t = SCENARIOS[scenario]
    runs = fits[scenario]
    assert all(f.model == "usl" for f in runs), "a curve with a peak inside the data is USL"
    assert sum(abs(f.lam / t.lam - 1) <= 2 * t.noise for f in runs) >= 8
    assert sum(f.peak_n is not None and abs(f.peak_n / t.peak_n - 1) <= 0.20 for f in runs) >= 8
    assert all(f.r2 > 0.95 for f in runs)


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lambda_interval_covers_the_truth(fits: dict[str, list[UslFit]], scenario: str) -> None:
    assert covered(fits[scenario], "lambda", SCENARIOS[scenario].lam) >= 8


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sigma_and_kappa_intervals_cover_the_truth_in_most_seeds(
    fits: dict[str, list[UslFit]], scenario: str
) -> None:
    """A floor against a broken interval; the calibration test below asks for what 95 % means."""
    t = SCENARIOS[scenario]
    assert covered(fits[scenario], "sigma", t.sigma) >= 6
    assert covered(fits[scenario], "kappa", t.kappa) >= 6


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sigma_and_kappa_intervals_are_calibrated(fits: dict[str, list[UslFit]], scenario: str) -> None:
    t = SCENARIOS[scenario]
    assert covered(fits[scenario], "sigma", t.sigma) >= 8
    assert covered(fits[scenario], "kappa", t.kappa) >= 8


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
def test_intervals_contain_their_estimates(fits: dict[str, list[UslFit]]) -> None:
    for f in (f for runs in fits.values() for f in runs):
        for name, value in (("lambda", f.lam), ("sigma", f.sigma), ("kappa", f.kappa)):
            low, high = f.ci[name]
            assert low <= high
            assert low * 0.9 <= value <= high * 1.1 + 1e-12, (name, value, low, high)


@pytest.mark.slow  # every seed's bootstrapped fits (the `fits` fixture)
def test_peak_follows_from_the_fitted_parameters(fits: dict[str, list[UslFit]]) -> None:
    for f in fits["3%"]:
        assert f.peak_n is not None
        assert f.peak_n == pytest.approx(math.sqrt((1 - f.sigma) / f.kappa))
        assert f.peak_throughput == pytest.approx(f.predict(f.peak_n))
        assert f.predict(f.peak_n) >= max(f.predict(n) for n in N)


# --- model choice -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_linear_data_is_called_linear(seed: int) -> None:
    n, x = Truth(lam=100.0, sigma=0.0, kappa=0.0, noise=0.03).sample(seed)
    f = fit_usl(n, x, seed=seed)
    assert f.model == "linear"
    assert f.sigma == 0.0 and f.kappa == 0.0
    assert f.lam == pytest.approx(100.0, rel=0.03)
    assert f.peak_n is None and f.peak_throughput is None
    assert f.aicc["linear"] <= min(f.aicc["amdahl"], f.aicc["usl"]) + 2.0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_contention_without_coherency_is_called_amdahl(seed: int) -> None:
    n, x = Truth(lam=100.0, sigma=0.05, kappa=0.0, noise=0.03).sample(seed)
    f = fit_usl(n, x, seed=seed)
    assert f.model == "amdahl"
    assert f.kappa == 0.0
    assert f.sigma == pytest.approx(0.05, abs=0.01)
    assert f.peak_n is None


# --- held-out error and input checks -----------------------------------------------------------------


@pytest.mark.slow
def test_holdout_error_needs_four_distinct_n() -> None:
    t = SCENARIOS["3%"]
    four = fit_usl(*t.sample(1, ns=[1, 2, 4, 8]))
    assert four.distinct_n == 4
    assert four.holdout_error is not None
    assert abs(four.holdout_error) < 0.15
    three = fit_usl(*t.sample(1, ns=[1, 2, 4]))
    assert three.distinct_n == 3
    assert three.holdout_error is None


def test_holdout_error_is_the_relative_miss_at_the_largest_n() -> None:
    """Linear up to 8, then flat at 16: fitted without 16, the line predicts twice what was measured."""
    f = fit_usl([1, 2, 4, 8, 16], [100.0, 200.0, 400.0, 800.0, 800.0])
    assert f.holdout_error == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize(
    ("n", "x", "message"),
    [
        ([1, 2], [100.0, 190.0], "at least 3 points"),
        ([4, 4, 4], [100.0, 101.0, 99.0], "2 or more distinct N"),
        ([1, 2, 4], [100.0, 190.0], "at least 3 points"),
        ([0, 2, 4], [0.0, 190.0, 350.0], "N must be > 0"),
        ([1, 2, 4], [100.0, -1.0, 350.0], "throughput >= 0"),
    ],
)
def test_bad_input_is_refused(n: list[float], x: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_usl(n, x)


def test_predictions_cover_the_data_the_peak_and_the_extrapolation() -> None:
    f = fit_usl(*SCENARIOS["3%"].sample(2), extrapolate_to=64)
    at = [p.n for p in f.predictions]
    assert at == sorted(at)
    assert {*map(float, N), 64.0} <= set(at)
    assert f.peak_n in at
    for p in f.predictions:
        assert p.low <= p.throughput <= p.high or math.isclose(p.low, p.high)


# --- caplab fit-usl ----------------------------------------------------------------------------------


def fit_usl_cli(caplab_cmd: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*caplab_cmd, "fit-usl", *args], capture_output=True, text=True, timeout=60, check=False
    )


def write_csv(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_fit_usl_json(caplab_cmd: list[str], tmp_path: Path) -> None:
    n, x = SCENARIOS["3%"].sample(0)
    rows = [
        "n,throughput",
        "# measured on the test rig",
        *(f"{a:g},{b:.3f}" for a, b in zip(n, x, strict=True)),
    ]
    p = fit_usl_cli(caplab_cmd, str(write_csv(tmp_path / "points.csv", rows)), "--json", "--predict", "64")
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    for key in ("lambda", "sigma", "kappa", "ci", "r2", "peak_n", "peak_throughput", "holdout_error"):
        assert key in doc, key
    for name in ("lambda", "sigma", "kappa"):
        low, high = doc["ci"][name]
        assert low <= high
    assert doc["model"] == "usl"
    assert doc["points"] == len(n)
    assert doc["peak_n"] == pytest.approx(SCENARIOS["3%"].peak_n, rel=0.2)
    assert isinstance(doc["holdout_error"], float)
    assert doc["requested"][0]["n"] == 64


@pytest.mark.slow
def test_fit_usl_table(caplab_cmd: list[str], tmp_path: Path) -> None:
    p = fit_usl_cli(caplab_cmd, str(write_csv(tmp_path / "p.csv", ["1,100", "2,190", "4,350", "8,600"])))
    assert p.returncode == 0, p.stderr
    assert "fits best" in p.stdout
    assert "lambda" in p.stdout


@pytest.mark.parametrize(
    ("rows", "line"),
    [
        (["n,throughput", "1,100", "2,abc", "4,350"], 3),
        (["n,throughput", "1,100", "2,190", "4"], 4),
        (["1,100", "2,190", "", "x,350"], 4),
    ],
)
@pytest.mark.slow
def test_fit_usl_bad_row_exits_2_naming_file_and_line(
    caplab_cmd: list[str], tmp_path: Path, rows: list[str], line: int
) -> None:
    path = write_csv(tmp_path / "bad.csv", rows)
    p = fit_usl_cli(caplab_cmd, str(path), "--json")
    assert p.returncode == 2
    assert f"{path}:{line}: expected two numbers n,throughput" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


@pytest.mark.slow
def test_fit_usl_too_few_points_exits_2(caplab_cmd: list[str], tmp_path: Path) -> None:
    path = write_csv(tmp_path / "few.csv", ["1,100", "2,190"])
    p = fit_usl_cli(caplab_cmd, str(path), "--json")
    assert p.returncode == 2
    assert f"{path}: a scaling fit needs at least 3 points" in p.stderr


@pytest.mark.slow
def test_fit_usl_non_finite_row_is_a_bad_row(caplab_cmd: list[str], tmp_path: Path) -> None:
    path = write_csv(tmp_path / "nan.csv", ["n,throughput", "1,100", "2,nan", "4,350", "8,600"])
    p = fit_usl_cli(caplab_cmd, str(path), "--json")
    assert p.returncode == 2
    assert f"{path}:3:" in p.stderr


@pytest.mark.slow
def test_fit_usl_presents_no_model_when_none_fits(caplab_cmd: list[str], tmp_path: Path) -> None:
    """The quick demo's capacities at 1–4 hosts: a peak at 2, then flat. Every candidate fits
    worse than the mean (R² < 0), so there is no model, and nothing is extrapolated."""
    csv_file = str(write_csv(tmp_path / "p.csv", ["1,2000", "2,2960", "3,2800", "4,2800"]))
    p = fit_usl_cli(caplab_cmd, csv_file, "--json", "--predict", "8")
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    assert doc["model"] is None and doc["fits"] is False
    assert doc["predictions"] == [] and doc["requested"] == []
    assert doc["peak"] == {"n": 2.0, "throughput": 2960.0}
    assert doc["candidate"]["r2"] < 0
    table = fit_usl_cli(caplab_cmd, csv_file, "--predict", "8").stdout
    assert "no model fits" in table and "nothing is extrapolated" in table
    assert "lambda" not in table and "fits best" not in table
