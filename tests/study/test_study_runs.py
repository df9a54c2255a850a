"""The study runner's schedule on a simulated system: `replicates: {min, max, until}` stops a quiet
cell at its minimum and gives a noisy one more replicates, up to ``max``, each cell's capacity
saying how many it took and why it stopped; Ctrl-C in an interleaved study marks every cell begun
and not finished interrupted, and resuming runs them again. The runner is given a plan runner (the
seam load agents use) that answers each trial as a server whose capacity is chosen per cell and
replicate, so the whole runner, search and store run in-process in a second or two."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from caplab.engine import IntervalSnapshot, OpenLoad, Plan, RunResult, Target, run
from caplab.json_types import JsonObject, member
from caplab.spec import Cell, load_study
from caplab.store import Store
from caplab.study.observer import Silent
from caplab.study.runner import StudyRunner
from caplab.study.schedule import Budget, Schedule
from caplab.systems.process import RunningServer
from support.capacity_probes import run_result, series

pytestmark = pytest.mark.slow  # one real trial, for the histograms a stored trial carries

CAPACITIES = {
    "quiet": [1000.0, 1000.0, 1000.0, 1000.0, 1000.0],
    "noisy": [600.0, 1400.0, 800.0, 1200.0, 1000.0],
}
"""Each cell's capacity in its replicates, in order (the simulated server's run-to-run spread)."""


class Simulated(Silent):
    """Watches which cell's replicate is running, and answers its trials as that server would:
    in time up to the replicate's capacity, late beyond it."""

    def __init__(self, real: RunResult) -> None:
        self.real = real
        """A real trial's result, whose histograms each answer carries (the cell's merged latency)."""
        self.current: tuple[str, int] | None = None
        self.replicates: list[tuple[str, int]] = []
        self.cells: list[int] = []
        """Each replicate's cell, by index, in the order they ran."""
        self.interrupt_at: int | None = None
        """Ctrl-C at this replicate (counted across the study from 0)."""

    def replicate_started(self, cell: Cell, line: str) -> None:
        name = str(cell.factors["server"])
        self.current = (name, sum(1 for n, _ in self.replicates if n == name))
        self.replicates.append(self.current)
        self.cells.append(cell.index)

    def run(self, plan: Plan, on_interval: Callable[[IntervalSnapshot], bool | None]) -> RunResult:
        assert self.current is not None and isinstance(plan.load, OpenLoad)
        if len(self.replicates) - 1 == self.interrupt_at:
            raise KeyboardInterrupt
        name, replicate = self.current
        rate = plan.load.profile[0].rate_start
        steps = round(plan.warmup_s + plan.duration_s)
        intervals = series([rate] * steps)
        for snapshot in intervals:
            on_interval(snapshot)
        within = rate <= CAPACITIES[name][replicate]
        answer = run_result(rate, intervals, plan.duration_s, plan.warmup_s, p99=20.0 if within else 80.0)
        return replace(answer, raw=self.real.raw)


def capacity(metrics: JsonObject | None) -> dict[str, Any]:
    return dict(member(metrics or {}, "capacity"))


@pytest.fixture(scope="module")
def real(plain_server: RunningServer) -> RunResult:
    """One real trial's result, whose histograms each simulated answer carries."""
    return run(Plan(Target(f"http://{plain_server.address}/"), OpenLoad.constant(100, 0.2), duration_s=0.2))


def write(tmp_path: Path, study: dict[str, object]) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def test_a_noisy_cell_takes_more_replicates_than_a_quiet_one(tmp_path: Path, real: RunResult) -> None:
    study = {
        "name": "until",
        "target": {"http": {"url": "http://127.0.0.1:9/"}},
        "isolation": "shared",
        "factors": {"server": ["quiet", "noisy"]},
        "load": {"duration": "2s", "warmup": "1s"},
        "slo": ["p99<=50ms"],
        "search": {"precision": "5%", "trial": "2s", "repeats": 1, "start": 200},
        "replicates": {"min": 2, "max": 4, "until": "10%"},
        "seed": 3,
    }
    simulated = Simulated(real)
    with Store(f"sqlite:///{tmp_path / 'c.db'}") as store:
        outcome = StudyRunner(load_study(write(tmp_path, study)), store, simulated, simulated.run).run()
        assert outcome.status == "complete"
        cells = {c.factors["server"]: c for c in store.cells(outcome.study_id)}
    quiet, noisy = (capacity(cells[n].metrics) for n in ("quiet", "noisy"))
    assert quiet["replicate_count"] == 2 and quiet["stopped"].endswith("≤ 10 %")
    assert noisy["replicate_count"] == 4 and noisy["stopped"].startswith("max 4 reached")
    assert quiet["until"] == noisy["until"] == 0.1 and quiet["half_width"] <= 0.1 < noisy["half_width"]
    # Both cells' first two replicates came first (shuffled), then the noisy cell's rounds alone.
    assert sorted(simulated.replicates[:4]) == [("noisy", 0), ("noisy", 1), ("quiet", 0), ("quiet", 1)]
    assert simulated.replicates[4:] == [("noisy", 2), ("noisy", 3)]


def test_ctrl_c_interrupts_every_begun_cell_and_resume_runs_their_replicates_again(
    tmp_path: Path, real: RunResult
) -> None:
    study = {
        "name": "interrupted",
        "target": {"http": {"url": "http://127.0.0.1:9/"}},
        "isolation": "shared",
        "factors": {"server": ["quiet", "noisy"]},
        "load": {"rate": 100, "duration": "1s"},
        "replicates": 2,
        "seed": 1,  # noisy, quiet, noisy, quiet: both cells begun before either ends
    }
    path = write(tmp_path, study)
    interrupted = Simulated(real)
    interrupted.interrupt_at = 2
    with Store(f"sqlite:///{tmp_path / 'c.db'}") as store:
        outcome = StudyRunner(load_study(path), store, interrupted, interrupted.run).run()
        assert outcome.status == "interrupted"
        assert interrupted.replicates == [("noisy", 0), ("quiet", 0), ("noisy", 1)]
        assert [c.status for c in store.cells(outcome.study_id)] == ["interrupted", "interrupted"]
        resumed = Simulated(real)
        again = StudyRunner(load_study(path), store, resumed, resumed.run).run(resume=True)
        assert again.study_id == outcome.study_id and again.status == "complete"
        # Every replicate of both cells again, in the order the same seed draws.
        assert resumed.replicates == [("noisy", 0), ("quiet", 0), ("noisy", 1), ("quiet", 1)]
        cells = store.cells(outcome.study_id)
        assert [c.status for c in cells] == ["complete", "complete"]
        trials = store.trial_rows(outcome.study_id)
        assert sorted(t["cell_index"] for t in trials) == [0, 0, 1, 1], "the first attempt's trials went"


def test_a_resumed_study_keeps_the_seed_it_drew(tmp_path: Path, real: RunResult) -> None:
    study = {
        "name": "drawn",
        "target": {"http": {"url": "http://127.0.0.1:9/"}},
        "isolation": "shared",
        "factors": {"server": ["quiet", "noisy", "noisy"]},
        "load": {"rate": 100, "duration": "1s"},
        "replicates": 2,
    }
    path = write(tmp_path, study)
    interrupted = Simulated(real)
    interrupted.interrupt_at = 0
    with Store(f"sqlite:///{tmp_path / 'c.db'}") as store:
        outcome = StudyRunner(load_study(path), store, interrupted, interrupted.run).run()
        validated = store.study_document(outcome.study_id).study.validated
        assert validated is not None
        seed = validated["seed"]
        assert isinstance(seed, int)
        resumed = Simulated(real)
        StudyRunner(load_study(path), store, resumed, resumed.run).run(resume=True)
    budgets = dict.fromkeys(range(3), Budget(2, 2))
    drawn = [r.cell for r in Schedule(budgets, "interleaved", seed).runs()]
    assert resumed.cells == drawn, "the order the stored seed draws"
