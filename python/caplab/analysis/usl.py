"""Scaling: the Universal Scalability Law, X(N) = λN / (1 + σ(N−1) + κN(N−1)).

λ is the throughput of one unit, σ the contention (the serial fraction: Amdahl's law when κ = 0),
κ the coherency cost that makes throughput fall past a peak N* = √((1−σ)/κ). Fitted by bounded
least squares; intervals by residual bootstrap; linear and Amdahl fitted too, and the one the
data supports chosen by AICc, so a straight line is not dressed up as a curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

Model = Literal["linear", "amdahl", "usl"]
Array = NDArray[np.float64]

BOOTSTRAP_DRAWS = 400
AICC_MARGIN = 2.0


def usl(n: Array, lam: float, sigma: float, kappa: float) -> Array:
    result: Array = lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
    return result


@dataclass(frozen=True)
class Prediction:
    n: float
    throughput: float
    low: float
    high: float


@dataclass(frozen=True)
class UslFit:
    lam: float
    sigma: float
    kappa: float
    ci: dict[str, tuple[float, float]]
    r2: float
    model: Model
    """The simplest model the data supports (by AICc); λ, σ, κ are that model's."""
    peak_n: float | None
    peak_throughput: float | None
    holdout_error: float | None
    """Fit without the largest N, predict it: (predicted − measured) / measured."""
    points: int
    distinct_n: int
    aicc: dict[str, float]
    predictions: list[Prediction] = field(default_factory=list)

    def predict(self, n: float) -> float:
        return float(usl(np.array([n], dtype=np.float64), self.lam, self.sigma, self.kappa)[0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "lambda": self.lam,
            "sigma": self.sigma,
            "kappa": self.kappa,
            "ci": {k: list(v) for k, v in self.ci.items()},
            "r2": self.r2,
            "peak_n": self.peak_n,
            "peak_throughput": self.peak_throughput,
            "holdout_error": self.holdout_error,
            "points": self.points,
            "distinct_n": self.distinct_n,
            "aicc": self.aicc,
            "predictions": [p.__dict__ for p in self.predictions],
        }


def _fit(
    n: Array, x: Array, model: Model, near: tuple[float, float, float] | None = None
) -> tuple[float, float, float]:
    """Least squares for one model; σ and κ held at 0 where the model has no such term. ``near``:
    where to start (a bootstrap refit starts from the fit it resamples, a few steps from its own)."""
    lam0 = float(np.max(x / n))
    scale = np.maximum(x, 1e-9)
    if model == "linear":
        r = n / scale
        return float(np.sum(r) / np.sum(r * r)), 0.0, 0.0
    # scipy is imported here, not with the module: it costs a second at every start of `caplab run`
    # and `caplab report`, and most of their runs fit no scaling model.
    from scipy import optimize

    free = 2 if model == "amdahl" else 3

    def residuals(p: Array) -> Array:
        sigma = p[1]
        kappa = p[2] if free == 3 else 0.0
        # Relative residuals: measurement noise grows with throughput, so each point counts by
        # its relative error (absolute residuals would let the largest N decide the fit alone).
        out: Array = (usl(n, p[0], sigma, kappa) - x) / scale
        return out

    def jacobian(p: Array) -> Array:
        # Analytic derivatives of the relative residuals: least_squares would otherwise estimate
        # them by finite differences, one more evaluation per parameter at every step, and the
        # bootstrap refits 400 times per model.
        lam, sigma = p[0], p[1]
        kappa = p[2] if free == 3 else 0.0
        d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)
        slope = -lam * n * (n - 1.0) / (d * d)
        columns = [n / d, slope, slope * n][:free]
        out: Array = np.stack(columns, axis=1) / scale[:, None]
        return out

    lower = [1e-12, 0.0, 0.0][:free]
    upper = [np.inf, 1.0, 10.0][:free]
    start = np.array(list(near or (lam0, 0.05, 0.001))[:free])
    sol = optimize.least_squares(residuals, start, jac=jacobian, bounds=(lower, upper), method="trf")
    p = sol.x
    return float(p[0]), float(p[1]), float(p[2]) if free == 3 else 0.0


def _aicc(rss: float, points: int, params: int) -> float:
    rss = max(rss, 1e-300)
    base = points * math.log(rss / points) + 2 * params
    if points - params - 1 > 0:
        return base + 2 * params * (params + 1) / (points - params - 1)
    return math.inf


def fit_usl(
    n_values: list[float], throughputs: list[float], seed: int = 0, extrapolate_to: float | None = None
) -> UslFit:
    """Fits the data (repeated N allowed). Needs at least three points with two distinct N."""
    n = np.asarray(n_values, dtype=np.float64)
    x = np.asarray(throughputs, dtype=np.float64)
    if n.shape != x.shape or n.size < 3 or np.unique(n).size < 2:
        raise ValueError("a scaling fit needs at least 3 points at 2 or more distinct N")
    if np.any(n <= 0) or np.any(x < 0):
        raise ValueError("N must be > 0 and throughput >= 0")
    fits: dict[Model, tuple[float, float, float]] = {}
    aicc: dict[str, float] = {}
    for model, params in (("linear", 1), ("amdahl", 2), ("usl", 3)):
        m: Model = model  # type: ignore[assignment]
        fits[m] = _fit(n, x, m)
        rss = float(np.sum(((usl(n, *fits[m]) - x) / np.maximum(x, 1e-9)) ** 2))
        aicc[model] = _aicc(rss, int(n.size), params)
    # The simpler model stands unless the richer one is clearly better (ΔAICc > 2).
    chosen: Model = "linear"
    for richer in ("amdahl", "usl"):
        if aicc[richer] < aicc[chosen] - AICC_MARGIN:
            chosen = richer
    lam, sigma, kappa = fits[chosen]
    fitted = usl(n, lam, sigma, kappa)
    tss = float(np.sum((x - x.mean()) ** 2))
    r2 = 1.0 - float(np.sum((fitted - x) ** 2)) / tss if tss > 0 else 1.0
    draws = _bootstrap(n, x, fitted, chosen, seed, (lam, sigma, kappa))
    ci = {
        name: (float(np.percentile(draws[:, i], 2.5)), float(np.percentile(draws[:, i], 97.5)))
        for i, name in enumerate(("lambda", "sigma", "kappa"))
    }
    peak_n = math.sqrt((1.0 - sigma) / kappa) if kappa > 0 else None
    grid = sorted({*np.unique(n).tolist(), *([extrapolate_to] if extrapolate_to else [])})
    if peak_n is not None and peak_n not in grid:
        grid.append(peak_n)
    predictions = [_predict(float(g), lam, sigma, kappa, draws) for g in sorted(grid)]
    return UslFit(
        lam=lam,
        sigma=sigma,
        kappa=kappa,
        ci=ci,
        r2=r2,
        model=chosen,
        peak_n=peak_n,
        peak_throughput=float(usl(np.array([peak_n]), lam, sigma, kappa)[0]) if peak_n else None,
        holdout_error=_holdout(n, x, chosen),
        points=int(n.size),
        distinct_n=int(np.unique(n).size),
        aicc=aicc,
        predictions=predictions,
    )


def _bootstrap(
    n: Array, x: Array, fitted: Array, model: Model, seed: int, near: tuple[float, float, float]
) -> Array:
    """Residual bootstrap: refit on fitted × (1 + resampled relative residuals); rows of (λ, σ, κ)."""
    rng = np.random.default_rng(seed)
    residuals = (x - fitted) / np.maximum(fitted, 1e-9)
    # Inflate for the degrees of freedom the fit used, so intervals are not too narrow.
    dof = max(n.size - {"linear": 1, "amdahl": 2, "usl": 3}[model], 1)
    residuals = residuals * math.sqrt(n.size / dof)
    out = np.empty((BOOTSTRAP_DRAWS, 3))
    for i in range(BOOTSTRAP_DRAWS):
        sample = fitted * (1.0 + rng.choice(residuals, size=n.size, replace=True))
        out[i] = _fit(n, np.maximum(sample, 0.0), model, near)
    return out


def _predict(g: float, lam: float, sigma: float, kappa: float, draws: Array) -> Prediction:
    at = np.array([g], dtype=np.float64)
    spread = np.array([usl(at, *row)[0] for row in draws])
    return Prediction(
        g,
        float(usl(at, lam, sigma, kappa)[0]),
        float(np.percentile(spread, 2.5)),
        float(np.percentile(spread, 97.5)),
    )


def _holdout(n: Array, x: Array, model: Model) -> float | None:
    if np.unique(n).size < 4:
        return None
    largest = n.max()
    keep = n < largest
    lam, sigma, kappa = _fit(n[keep], x[keep], model)
    measured = float(x[~keep].mean())
    predicted = float(usl(np.array([largest]), lam, sigma, kappa)[0])
    return (predicted - measured) / measured if measured else None
