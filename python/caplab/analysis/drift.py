"""Whether the machine itself changed during a study: each cell's later runs against its earlier
ones, across every cell run more than once.

Each run (a replicate: a fresh start of the system) gives one figure — its capacity when the cell
was searched, its median latency when the load was fixed (a fixed load's throughput is the rate
offered until the system saturates, so it stays put while a slower machine shows in the time each
request takes; the median is the steadiest percentile of a short run). A figure is read as a speed
(a latency inverted), relative to its cell: runs are only ever compared with runs of their own
cell, as a ratio, so cells of any size compare and a cell's own configuration never reads as drift.
(Dividing each run by its cell's median, then comparing runs across cells, would do the same only
approximately: the medians are estimated from the very runs compared, which makes a rank test over
the pooled runs flag drift too often.)

Each cell's runs are split in time order into its earlier and its later half (an odd run out in
the middle is left aside). The change is the Hodges–Lehmann estimate — the median, over every
(later, earlier) pair of runs of one cell, of their log speed ratio — with its 95 % interval from
the order statistics of those pairs at the critical value of the stratified Mann–Whitney statistic
(the sum of the cells' own, whose exact distribution is the convolution of theirs). This is
non-parametric, as Maricq et al. (OSDI 2018) ask of run-to-run figures, whose distributions are
seldom normal; it needs no model of the drift's shape (a step anywhere or a gradual trend both
move the later half against the earlier); and its interval says how large the change is, not only
whether there is one. The machine drifted when the interval excludes no change.

Two limits, stated where the result is shown: with too few runs no interval can exclude no change
at 95 % (one cell needs 8 runs, two cells 6 each, six cells 2 each), and the check is then not
testable; and a cell's halves are the span its own runs cover — with each cell's replicates back
to back, drift between one cell and the next is its configuration's difference as far as any
analysis can tell; with the replicates interleaved, every cell spans the study.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache

LEVEL = 0.025
"""Each tail of the two-sided 95 % interval."""


@dataclass(frozen=True)
class Run:
    """One run of a cell: when it began measuring and its figure."""

    cell: int
    at: float
    """Seconds on any one clock (only the order of the runs counts)."""
    value: float
    higher_is_faster: bool
    """True for a capacity or a throughput; False for a latency."""


class DriftVerdict(Enum):
    DRIFTED = "drifted"
    STEADY = "no drift shown"
    NOT_TESTABLE = "not testable"


@dataclass(frozen=True)
class Drift:
    """The study's runs, later against earlier: the ratio of their speeds (below 1: the later runs
    were slower) with its 95 % interval, and what it rests on."""

    verdict: DriftVerdict
    runs: int
    """Runs of the cells that ran more than once (those the check can read)."""
    cells: int
    pairs: int
    """(later, earlier) pairs of runs of one cell."""
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    """Why the check is not testable."""

    @property
    def drifted(self) -> bool:
        return self.verdict is DriftVerdict.DRIFTED

    def size_text(self) -> str:
        """``later runs 18 % [11 %, 24 %] slower than earlier ones`` (or faster)."""
        if self.ratio is None or self.low is None or self.high is None:
            return ""
        if self.ratio <= 1.0:
            return (
                f"later runs {1 - self.ratio:.0%} [{1 - self.high:.0%}, {1 - self.low:.0%}] slower than "
                "earlier ones"
            )
        return (
            f"later runs {self.ratio - 1:.0%} [{self.low - 1:.0%}, {self.high - 1:.0%}] faster than "
            "earlier ones"
        )


def drift(runs: Sequence[Run]) -> Drift:
    """The drift check over a study's runs (see the module docstring)."""
    by_cell: dict[int, list[Run]] = defaultdict(list)
    for r in runs:
        if r.value > 0 and math.isfinite(r.value) and math.isfinite(r.at):
            by_cell[r.cell].append(r)
    counted = [c for c in by_cell.values() if len(c) >= 2]
    differences: list[float] = []
    null: tuple[int, ...] = (1,)
    for cell in counted:
        speeds = [math.log(r.value if r.higher_is_faster else 1.0 / r.value) for r in sorted(cell, key=_at)]
        half = len(speeds) // 2
        differences += [b - a for b in speeds[len(speeds) - half :] for a in speeds[:half]]
        null = _convolve(null, _u_counts(half, half))
    n_runs = sum(len(c) for c in counted)
    k = _critical_rank(null)
    if k == 0:
        reason = _not_testable(len(by_cell), len(counted), n_runs)
        return Drift(DriftVerdict.NOT_TESTABLE, n_runs, len(counted), len(differences), reason=reason)
    differences.sort()
    ratio = math.exp(statistics.median(differences))
    low, high = math.exp(differences[k - 1]), math.exp(differences[len(differences) - k])
    verdict = DriftVerdict.DRIFTED if low > 1.0 or high < 1.0 else DriftVerdict.STEADY
    return Drift(verdict, n_runs, len(counted), len(differences), ratio, low, high)


def replicates_needed(cells: int) -> int:
    """The fewest runs per cell that let the check, over ``cells`` cells, exclude no change."""
    for runs in range(2, 64):
        null: tuple[int, ...] = (1,)
        for _ in range(cells):
            null = _convolve(null, _u_counts(runs // 2, runs // 2))
        if _critical_rank(null) > 0:
            return runs
    raise ValueError("no number of runs makes the check testable")


def _at(r: Run) -> float:
    return r.at


def _not_testable(cells: int, counted: int, runs: int) -> str:
    if not cells:
        return "no run recorded its figure and start time"
    if not counted:
        each = "the one cell" if cells == 1 else f"each of the {cells} cells"
        return f"{each} ran once: a cell's runs are only compared with each other"
    return (
        f"{runs} runs of {counted} cells run more than once are too few for a 95 % interval to exclude no "
        "change (one cell needs 8 runs, two cells 6 each, six cells 2 each)"
    )


def _critical_rank(counts: Sequence[int]) -> int:
    """The rank k (from 1) of the pairwise differences bounding a two-sided 95 % interval: the
    largest k with P(U < k) ≤ 2.5 % under no change (U: the Mann–Whitney statistic, its null
    distribution given as counts); 0 when even P(U = 0) is above it (no interval can exclude no
    change)."""
    total = sum(counts)
    below, k = 0, 0
    while k < len(counts) and (below + counts[k]) / total <= LEVEL:
        below += counts[k]
        k += 1
    return k


def _convolve(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The distribution of the sum of two independent counts."""
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return tuple(out)


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings of two samples give each value of U (0 … m·n): the
    coefficients of the Gaussian binomial, by f(m, n) = f(m−1, n) shifted by n + f(m, n−1)."""
    if m == 0 or n == 0:
        return (1,)
    with_last = _u_counts(m - 1, n)
    without = _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(with_last):
        out[u + n] += c
    for u, c in enumerate(without):
        out[u] += c
    return tuple(out)
