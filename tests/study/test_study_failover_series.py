"""A failover trial read per database from the engine's per-target series: places in the
round-robin that name one database (a loaded one takes several) are added together under the
database's name, and a one-target run is read from the run's own series."""

from __future__ import annotations

from caplab.engine import (
    GeneratorFigures,
    IntervalSnapshot,
    LatencySummary,
    RunResult,
    TargetInterval,
    TargetSeries,
)
from caplab.experiments.failover import database_name, database_series

URL = "postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/ag_{i}?target_session_attrs=read-write"
NONE = LatencySummary(0, None, None, None, None, None, None, None)


def run_result(per_target: tuple[TargetSeries, ...], intervals: list[IntervalSnapshot]) -> RunResult:
    figures = GeneratorFigures(1, 0.0, None, None, None, 0.0, 1, False, None)
    return RunResult(
        "open", 10.0, None, 0.2, 0.0, 0, 0, 0, 0, 0, 0.0, NONE, NONE, {}, intervals, figures, None, False, {},
        per_target=per_target,
    )  # fmt: skip


def place(i: int, counts: list[tuple[int, int]]) -> TargetSeries:
    """One place of database ag_i: (completed, errors) per 0.1 s interval."""
    intervals = tuple(TargetInterval(k / 10, (k + 1) / 10, done, err) for k, (done, err) in enumerate(counts))
    return TargetSeries(URL.format(i=i), sum(c for c, _ in counts), sum(e for _, e in counts), intervals)


def test_places_of_one_database_are_added_together_under_its_name() -> None:
    loaded = [place(0, [(1, 0), (0, 2)]), place(1, [(1, 0), (1, 0)]), place(0, [(2, 0), (0, 1)])]
    series = database_series(run_result(tuple(loaded), []), URL.format(i=0))
    assert sorted(series) == ["ag_0", "ag_1"]
    assert [(i.completed, i.errors) for i in series["ag_0"]] == [(3, 0), (0, 3)]
    assert [(i.start_s, i.end_s) for i in series["ag_1"]] == [(0.0, 0.1), (0.1, 0.2)]


def test_one_target_is_read_from_the_runs_own_series() -> None:
    snapshot = IntervalSnapshot(0, 0.0, 0.1, False, 5, 4, 1, 0, 0, 40.0, NONE)
    series = database_series(run_result((), [snapshot]), URL.format(i=3))
    assert list(series) == ["ag_3"] and (series["ag_3"][0].completed, series["ag_3"][0].errors) == (4, 1)


def test_a_database_is_named_by_its_name_in_the_url() -> None:
    assert database_name(URL.format(i=7)) == "ag_7"
    assert database_name("postgresql://u@h:5432/db") == "db"
