"""`order: interleaved`: a study's replicates run spread across it in the order its seed draws —
visible in the run's output, recoverable from the store (each replicate's event and its trials'
times), and repeatable: a study run without a seed prints and stores the one it drew, and the
order it ran in is the one that seed gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from caplab.store import Store
from caplab.study.schedule import Budget, Schedule
from support.studies import caplab, free_port, knownserver, write_study

pytestmark = pytest.mark.slow

CELLS = 2
REPLICATES = 2


def drawn_order(seed: int) -> list[int]:
    """The cells in the order ``seed`` runs their replicates (the schedule, as a pure function)."""
    budgets = dict.fromkeys(range(CELLS), Budget(REPLICATES, REPLICATES))
    return [r.cell for r in Schedule(budgets, "interleaved", seed).runs()]


def mixed(cells: list[int]) -> bool:
    """Not cell after cell: some cell's replicates have another cell's run between them."""
    return cells != sorted(cells) and cells != sorted(cells, reverse=True)


def study(port: int, seed: int | None) -> dict[str, Any]:
    # The shortest study that has an order: two cells of two replicates, one 300 ms trial each.
    return {
        "name": "interleaved",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {"start": f"exec {knownserver(port, '--cpu-us', '{cpu}')}", "ready": {"port": port}},
        "factors": {"cpu": [0, 100]},
        "load": {"rate": 50, "duration": "300ms", "warmup": "0s"},
        "replicates": REPLICATES,
    } | ({"seed": seed} if seed is not None else {})


def stored_order(db_url: str, study_id: int) -> tuple[list[int], list[int], dict[str, Any]]:
    """The cells in the order their replicates' events were stored, in the order their trials
    started, and the study as validated."""
    with Store(db_url) as store:
        events = [e["cell_index"] for e in store.events(study_id) if e["kind"] == "replicate"]
        trials = sorted(store.trial_rows(study_id), key=lambda t: t["started_at"])
        validated = store.study_document(study_id).study.validated
    assert validated is not None
    return [e for e in events if e is not None], [t["cell_index"] for t in trials], dict(validated)


def test_replicates_run_interleaved_in_the_order_the_seed_draws(tmp_path: Path, db_url: str) -> None:
    seed = next(s for s in range(100) if mixed(drawn_order(s)))
    path = write_study(tmp_path / "seeded.yaml", study(free_port(), seed))
    done = caplab("run", path, "--db", db_url, "--no-report", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"order: interleaved, seed {seed}" in done.stderr
    # Each replicate's line names its cell and its place in the study, in the order they ran.
    lines = re.findall(r"cell #(\d) \(cpu=\d+\), replicate \d of 2 \(run (\d) of the study\)", done.stderr)
    assert [int(c) for c, _ in lines] == drawn_order(seed) and mixed(drawn_order(seed))
    assert [int(n) for _, n in lines] == [1, 2, 3, 4]
    events, trials, validated = stored_order(db_url, 1)
    assert events == trials == drawn_order(seed)
    assert (validated["order"], validated["seed"]) == ("interleaved", seed)

    # Without a seed in the file, one is drawn, printed and stored, and the runs follow it.
    path = write_study(tmp_path / "drawn.yaml", study(free_port(), None))
    done = caplab("run", path, "--db", db_url, "--no-report", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = re.search(r"order: interleaved, seed (\d+)", done.stderr)
    assert printed is not None, done.stderr[-2000:]
    drawn = int(printed.group(1))
    events, trials, validated = stored_order(db_url, 2)
    assert validated["seed"] == drawn and events == trials == drawn_order(drawn)
