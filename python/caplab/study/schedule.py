"""The order a study's runs are made in — each run one replicate of one cell, on a fresh start of
the system — and, with ``replicates: {min, max, until}``, how many runs each cell takes.

``sequential``: cell after cell in matrix order, each cell's replicates back to back.
``interleaved``: the runs of every cell spread across the study in a random order drawn from the
study's seed, so that a machine that drifts (another tenant, heat, a filling disk) hits every
configuration alike instead of the later ones (Abedi & Brecht, ICPE 2017). With one replicate a
cell this shuffles the cells themselves.

With ``until``, a study runs in rounds: first ``min`` replicates of every cell, then one more of
each cell whose capacity's interval is still wider than ``until``, until it is narrow enough or
``max`` replicates have run; each round is shuffled on its own (interleaved), or a cell takes its
rounds before the next cell starts (sequential). Which cells a later round holds depends on the
figures, so a round's order is drawn from the seed and the round's number alone: the same study
with the same figures runs in the same order.

Pure: the runner asks for the runs and says which cells are done; nothing here runs anything.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from caplab.json_types import JsonDict, JsonObject, number, pair
from caplab.spec import Order, ReplicatesSpec


@dataclass(frozen=True)
class Budget:
    """How many replicates a cell runs: ``min`` first, then more up to ``max`` while its
    capacity's interval is wider than ``until`` (None: exactly ``min``)."""

    min: int
    max: int
    until: float | None = None

    @classmethod
    def of(cls, replicates: int | ReplicatesSpec) -> Budget:
        if isinstance(replicates, int):
            return cls(replicates, replicates)
        return cls(replicates.min, replicates.max, replicates.until)


@dataclass(frozen=True)
class Run:
    """One replicate of one cell, in its place in the study."""

    cell: int
    """The cell's index in the matrix."""
    replicate: int
    """0-based, counted within the cell in the order its replicates run."""
    position: int
    """0-based, counted across the study in the order the runs are made."""
    last_of_round: bool
    """No more runs of this cell in this round: its figures so far decide whether it needs more."""


def study_order(order: Order | None, budgets: Mapping[int, Budget]) -> Order:
    """The order a study asked for, or its default: interleaved when a cell runs more than once."""
    if order is not None:
        return order
    return "interleaved" if any(b.max > 1 for b in budgets.values()) else "sequential"


def round_order(
    wanted: Mapping[int, int], made: Mapping[int, int], order: Order, seed: int, round_: int
) -> list[tuple[int, int]]:
    """One round's runs as ``(cell, replicate)``: ``wanted[cell]`` more replicates of each cell,
    numbered on from the ``made[cell]`` it already has; interleaved, in an order drawn from the
    seed and the round's number, a cell's replicates keeping their numbers' order."""
    slots = [cell for cell in sorted(wanted) for _ in range(wanted[cell])]
    if order == "interleaved":
        random.Random(f"caplab order {seed} round {round_}").shuffle(slots)
    counts = dict(made)
    runs = []
    for cell in slots:
        runs.append((cell, counts.get(cell, 0)))
        counts[cell] = counts.get(cell, 0) + 1
    return runs


class Schedule:
    """The study's runs, round after round; a cell leaves it when the runner closes it (its
    replicates settled it, or it failed)."""

    def __init__(self, budgets: Mapping[int, Budget], order: Order, seed: int) -> None:
        self.budgets = dict(budgets)
        self.order = order
        self.seed = seed
        self.made = dict.fromkeys(self.budgets, 0)
        self.closed: set[int] = set()

    def close(self, cell: int) -> None:
        """The cell runs no more replicates: the rest of its round is skipped."""
        self.closed.add(cell)

    def runs(self) -> Iterator[Run]:
        """Every run, in order; the next round is drawn once the last one's runs are taken, from
        the cells still open then."""
        position = 0
        round_ = 0
        while wanted := self._wanted():
            runs = round_order(wanted, self.made, self.order, self.seed, round_)
            last = {cell: n for n, (cell, _) in enumerate(runs)}
            for n, (cell, replicate) in enumerate(runs):
                if cell in self.closed:
                    continue
                self.made[cell] = replicate + 1
                yield Run(cell, replicate, position, last_of_round=last[cell] == n)
                position += 1
            round_ += 1

    def _wanted(self) -> dict[int, int]:
        """How many more replicates each open cell runs in the next round: its ``min`` first, then
        one at a time up to ``max``; sequential, only the first open cell's."""
        wanted: dict[int, int] = {}
        for cell, budget in sorted(self.budgets.items()):
            made = self.made[cell]
            if cell in self.closed or made >= budget.max:
                continue
            wanted[cell] = budget.min - made if made < budget.min else 1
            if self.order == "sequential":
                break
        return wanted


@dataclass(frozen=True)
class Stop:
    """Why a cell runs no more replicates."""

    reason: str
    half_width: float | None = None
    """Half the capacity's interval, relative to the capacity (None: no interval)."""

    def to_json(self, until: float) -> JsonDict:
        return {"until": until, "half_width": self.half_width, "stopped": self.reason}


def relative_half_width(capacity: JsonObject) -> float | None:
    """Half the width of a capacity's 95 % interval over replicates, relative to the capacity (in
    users when the search was for users); None when it has no such interval."""
    ci = pair(capacity, "ci95")
    users = number(capacity, "capacity_users")
    value = users if users is not None else number(capacity, "capacity_rps")
    if capacity.get("interval") != "replicates" or ci is None or not value:
        return None
    return (ci[1] - ci[0]) / 2 / value


def stop_after(budget: Budget, made: int, capacity: JsonObject) -> Stop | None:
    """Whether a cell that has run ``made`` replicates is done (``capacity``: its figure combined
    over them), or needs another: never before ``min``, always at ``max``; in between, done once
    its interval is within ``until``."""
    if made < budget.min:
        return None
    if budget.until is None:
        return Stop(f"{made} replicates")
    width = relative_half_width(capacity)
    target = _percent(budget.until)
    if width is not None and width <= budget.until:
        return Stop(f"interval ±{_percent(width)} ≤ {target}", width)
    if made >= budget.max:
        now = f"interval ±{_percent(width)}" if width is not None else "no interval"
        return Stop(f"max {budget.max} reached ({now}, wanted ≤ {target})", width)
    return None


def _percent(fraction: float) -> str:
    """0.041 → ``4.1 %``, 0.05 → ``5 %``."""
    return f"{fraction * 100:.1f}".removesuffix(".0") + " %"
