"""The order of a study's runs and how many each cell takes, as pure functions: interleaved runs
mix the cells in an order the seed repeats, sequential runs keep the matrix order, and replicates
``until`` an interval stop at the target or at ``max``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from caplab.experiments.capacity import combine_replicates
from caplab.json_types import JsonObject, member
from caplab.spec.replicates import Order
from caplab.study.schedule import Budget, Run, Schedule, relative_half_width, stop_after, study_order


def all_runs(
    budgets: Mapping[int, Budget],
    order: Order,
    seed: int = 7,
    settled: Callable[[int, int], bool] = lambda cell, made: True,
) -> list[Run]:
    """Every run the schedule gives, a cell closed after its last run of a round when
    ``settled(cell, replicates made)`` says it is done (or its budget is spent)."""
    schedule = Schedule(budgets, order, seed)
    runs = []
    for run in schedule.runs():
        runs.append(run)
        made = run.replicate + 1
        budget = budgets[run.cell]
        if run.last_of_round and made >= budget.min and (settled(run.cell, made) or made >= budget.max):
            schedule.close(run.cell)
    return runs


def cells_of(runs: list[Run]) -> list[int]:
    return [r.cell for r in runs]


def fixed(n: int, cells: int = 3) -> dict[int, Budget]:
    return {i: Budget(n, n) for i in range(cells)}


def test_interleaved_runs_mix_the_cells_and_number_each_cells_replicates_in_order() -> None:
    runs = all_runs(fixed(3, cells=4), "interleaved")
    assert sorted(cells_of(runs)) == sorted([0, 1, 2, 3] * 3), "every replicate of every cell, once"
    assert cells_of(runs) != sorted(cells_of(runs)), "not cell after cell"
    assert [r.position for r in runs] == list(range(12))
    for cell in range(4):
        mine = [r for r in runs if r.cell == cell]
        assert [r.replicate for r in mine] == [0, 1, 2]
        assert [r.last_of_round for r in mine] == [False, False, True]


def test_the_seed_repeats_the_order_and_another_seed_draws_another() -> None:
    one = cells_of(all_runs(fixed(3, cells=4), "interleaved", seed=11))
    assert cells_of(all_runs(fixed(3, cells=4), "interleaved", seed=11)) == one
    assert cells_of(all_runs(fixed(3, cells=4), "interleaved", seed=12)) != one


def test_sequential_runs_each_cells_replicates_back_to_back_in_matrix_order() -> None:
    runs = all_runs(fixed(2), "sequential")
    assert [(r.cell, r.replicate) for r in runs] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_one_replicate_a_cell_interleaved_shuffles_the_cells() -> None:
    orders = {tuple(cells_of(all_runs(fixed(1, cells=5), "interleaved", seed=s))) for s in range(5)}
    assert all(sorted(o) == [0, 1, 2, 3, 4] for o in orders) and len(orders) > 1


def test_the_default_order_interleaves_once_a_cell_runs_more_than_once() -> None:
    assert study_order(None, fixed(1)) == "sequential"
    assert study_order(None, fixed(3)) == "interleaved"
    assert study_order(None, {0: Budget(3, 10, 0.05)}) == "interleaved"
    assert study_order("sequential", fixed(3)) == "sequential"


def test_until_runs_min_of_every_cell_then_rounds_for_the_cells_still_too_wide() -> None:
    # Cell 0 settles at its minimum, cell 1 after 5 replicates, cell 2 never (its max is 6).
    budgets = {i: Budget(3, 6, 0.05) for i in range(3)}
    needs = {0: 3, 1: 5, 2: 99}
    runs = all_runs(budgets, "interleaved", settled=lambda cell, made: made >= needs[cell])
    first = cells_of(runs[:9])
    assert sorted(first) == [0, 0, 0, 1, 1, 1, 2, 2, 2], "min replicates of every cell come first"
    later = [(r.cell, r.replicate) for r in runs[9:]]
    assert sorted(later) == [(1, 3), (1, 4), (2, 3), (2, 4), (2, 5)], "one more a round, only while wide"
    assert all(r.last_of_round for r in runs[9:])
    assert [r.cell for r in runs].count(0) == 3 and [r.cell for r in runs].count(2) == 6


def test_until_rounds_are_shuffled_and_repeat_with_the_seed() -> None:
    budgets = {i: Budget(2, 8, 0.05) for i in range(4)}
    never: Callable[[int, int], bool] = lambda cell, made: False  # noqa: E731
    runs = all_runs(budgets, "interleaved", seed=3, settled=never)
    assert len(runs) == 32
    rounds = [cells_of(runs[8 + 4 * k : 12 + 4 * k]) for k in range(6)]
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1, "each round drawn on its own"
    assert cells_of(all_runs(budgets, "interleaved", seed=3, settled=never)) == cells_of(runs)


def test_sequential_until_finishes_a_cell_before_the_next_begins() -> None:
    budgets = {0: Budget(2, 5, 0.05), 1: Budget(2, 5, 0.05)}
    runs = all_runs(budgets, "sequential", settled=lambda cell, made: made >= (4 if cell == 0 else 2))
    assert [(r.cell, r.replicate) for r in runs] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]


def test_a_closed_cell_skips_the_rest_of_its_round() -> None:
    schedule = Schedule(fixed(3, cells=2), "interleaved", 5)
    runs = []
    for run in schedule.runs():
        runs.append(run)
        if run.cell == 1:  # cell 1 fails at its first replicate
            schedule.close(1)
    assert cells_of(runs).count(1) == 1 and cells_of(runs).count(0) == 3


def capacity(mean: float, low: float, high: float, interval: str = "replicates") -> JsonObject:
    return {"capacity_rps": mean, "capacity_users": None, "ci95": [low, high], "interval": interval}


def test_the_interval_half_width_is_relative_to_the_capacity_in_the_unit_searched() -> None:
    assert relative_half_width(capacity(100.0, 96.0, 104.0)) == 0.04
    users = {"capacity_rps": 900.0, "capacity_users": 50.0, "ci95": [45.0, 55.0], "interval": "replicates"}
    assert relative_half_width(users) == 0.1
    assert relative_half_width(capacity(100.0, 99.0, 101.0, interval="search")) is None, "no CI"
    assert relative_half_width({"found": False, "ci95": None, "interval": None}) is None


def test_until_stops_at_the_target_or_at_max_and_says_which() -> None:
    budget = Budget(3, 10, 0.05)
    assert stop_after(budget, 2, capacity(100.0, 99.0, 101.0)) is None, "never before min"
    tight = stop_after(budget, 3, capacity(100.0, 95.9, 104.1))
    assert tight is not None and tight.reason == "interval ±4.1 % ≤ 5 %" and tight.half_width is not None
    assert stop_after(budget, 4, capacity(100.0, 80.0, 120.0)) is None, "too wide: another replicate"
    spent = stop_after(budget, 10, capacity(100.0, 80.0, 120.0))
    assert spent is not None and spent.reason == "max 10 reached (interval ±20 %, wanted ≤ 5 %)"
    none = stop_after(budget, 10, {"found": False, "ci95": None, "interval": None})
    assert none is not None and none.reason == "max 10 reached (no interval, wanted ≤ 5 %)"
    assert spent.to_json(0.05) == {"until": 0.05, "half_width": 0.2, "stopped": spent.reason}


def test_a_fixed_count_stops_at_its_count() -> None:
    stop = stop_after(Budget(3, 3), 3, {})
    assert stop is not None and stop.reason == "3 replicates"
    assert stop_after(Budget(3, 3), 2, {}) is None


def searched(capacity: float, step: float = 0.01) -> JsonObject:
    """A replicate's search that found ``capacity``, its bracket ``step`` above it."""
    bracket = [capacity, capacity * (1 + step)]
    return {
        "capacity": {"model": "open", "found": True, "capacity_rps": capacity, "ci95": bracket},
        "search_trials": [],
        "limit": None,
    }


def replicates_until(figures: list[float], budget: Budget) -> tuple[int, str]:
    """How many of these replicates' capacities a cell runs before it stops, and why: each
    decision on the cell's interval as combine_replicates gives it over the replicates so far."""
    for made in range(1, len(figures) + 1):
        capacity = member(combine_replicates([searched(f) for f in figures[:made]]), "capacity")
        if (stop := stop_after(budget, made, capacity)) is not None:
            return made, stop.reason
    raise AssertionError("never stopped")


def test_a_quiet_cell_stops_at_its_minimum_and_a_noisy_one_takes_more() -> None:
    """The decision `until` makes on the runner's own interval (combine_replicates: a t-interval
    over the replicates, never narrower than their search brackets). A real quiet and noisy server
    would cost two searches a replicate in a test that must stay short; these are their figures."""
    budget = Budget(3, 10, 0.05)
    quiet = [1000.0, 1010.0, 995.0, 1005.0]
    made, reason = replicates_until(quiet, budget)
    assert made == 3 and reason.startswith("interval ±") and reason.endswith("≤ 5 %")
    # Runs a few per cent apart: the interval narrows as replicates come (±17 % at three, ±5.6 %
    # at six) until, at seven, it is within 5 %.
    noisy = [1000.0, 1080.0, 940.0, 1050.0, 960.0, 1030.0, 990.0, 1010.0, 970.0, 1020.0]
    assert replicates_until(noisy, budget) == (7, "interval ±4.6 % ≤ 5 %")
    wild = [1000.0, 1600.0, 600.0, 1400.0, 700.0, 1500.0, 500.0, 1300.0, 800.0, 1200.0]
    assert replicates_until(wild, budget) == (10, "max 10 reached (interval ±26.6 %, wanted ≤ 5 %)")
