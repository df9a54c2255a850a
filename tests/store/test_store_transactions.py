"""A trial is stored whole or not at all: when a write fails half-way, and when the writing
process is killed with SIGKILL in the middle of a transaction."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from caplab.collect.base import ResourceSample
from caplab.engine import RunResult
from caplab.store import Store
from caplab.store.connect import open_engine
from caplab.store.schema import metadata
from support.stores import Filled, same_json, samples_for

TRIAL_TABLES = ["trials", "intervals", "histograms", "resource_samples"]


def counts(url: str) -> dict[str, int]:
    engine = open_engine(url)
    with engine.connect() as conn:
        found = {
            t: int(conn.execute(sa.select(sa.func.count()).select_from(metadata.tables[t])).scalar_one())
            for t in TRIAL_TABLES
        }
    engine.dispose()
    return found


def test_a_failure_while_writing_samples_leaves_no_trace_of_the_trial(
    store: Store, store_url: str, filled: Filled, run_result: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = counts(store_url)

    def broken(*_: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Store, "_insert_samples", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.save_trial(filled.cell_ids[1], 0, run_result, samples_for(run_result))
    assert counts(store_url) == before


def test_a_constraint_violation_half_way_rolls_back_trial_intervals_and_histograms(
    store: Store, store_url: str, filled: Filled, run_result: RunResult
) -> None:
    before = counts(store_url)
    bad = [*samples_for(run_result), ResourceSample(1.0, "host", "cpu_percent", None)]  # type: ignore[arg-type]
    with pytest.raises(IntegrityError):
        store.save_trial(filled.cell_ids[1], 0, run_result, bad)
    assert counts(store_url) == before
    assert store.study_document(filled.study_id).cells[1].trials == ()


def test_saving_a_trial_again_replaces_it_and_a_failed_replacement_keeps_the_old_one(
    store: Store, store_url: str, filled: Filled, run_result: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = counts(store_url)
    store.save_trial(filled.cell_ids[0], 1, run_result, samples_for(run_result))
    assert counts(store_url) == before, "same cell, kind and index: replaced, not added"

    monkeypatch.setattr(Store, "_insert_samples", lambda *_: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        store.save_trial(filled.cell_ids[0], 1, run_result, [])
    assert counts(store_url) == before
    kept = store.study_document(filled.study_id).cells[0].trials[1]
    assert kept.index == 1
    assert same_json(dict(kept.result), run_result.raw)


# A writer that saves trials in a loop. With STALL it stops inside the transaction of its fourth
# trial (intervals and histograms written, samples too, not yet committed) and says so.
WRITER = """
import sys, time
from caplab.collect.base import ResourceSample
from caplab.engine import RunResult
from caplab.store import Store

url, raw_path, cell_id, stall = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "stall"
result = RunResult.from_json(open(raw_path).read())
samples = [ResourceSample(i * 0.01, "host", f"m{i % 50}", float(i)) for i in range(2000)]
store = Store(url)
written = 0
insert_samples = Store._insert_samples

def maybe_stall(self, conn, trial_id, rows):
    insert_samples(self, conn, trial_id, rows)
    if stall and written == 3:
        print("inside", flush=True)
        time.sleep(60)

Store._insert_samples = maybe_stall
while True:
    store.save_trial(cell_id, written, result, samples)
    written += 1
    print("saved", written, flush=True)
"""


def _kill_writer(url: str, raw_path: Path, cell_id: int, stall: bool) -> int:
    """Runs the writer until it is mid-transaction (stall) or has saved a few trials, then SIGKILLs
    it; returns how many trials it reported committed."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, str(raw_path), str(cell_id), "stall" if stall else "run"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    saved = 0
    deadline = time.monotonic() + 30
    try:
        for line in writer.stdout:
            if line.startswith("saved"):
                saved = int(line.split()[1])
            ready = line.startswith("inside") if stall else saved >= 3
            if ready or time.monotonic() > deadline:
                break
        if not stall:
            time.sleep(0.05)  # let it get into the next trial's transaction
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    return saved


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["inside_a_transaction", "whenever"])
def test_a_writer_killed_with_sigkill_leaves_every_trial_whole(
    store: Store, store_url: str, filled: Filled, run_result: RunResult, tmp_path: Path, moment: str
) -> None:
    raw_path = tmp_path / "result.json"
    raw_path.write_text(json.dumps(run_result.raw))
    cell_id = filled.cell_ids[1]
    committed = _kill_writer(store_url, raw_path, cell_id, stall=moment == "inside_a_transaction")

    with Store(store_url) as after:
        trials = [t for t in after.trial_rows(filled.study_id) if t["cell_index"] == 1]
        if moment == "inside_a_transaction":
            assert [t["trial_index"] for t in trials] == [0, 1, 2], "the trial being written is absent"
        else:
            assert len(trials) >= committed >= 3
        per_trial: dict[int, int] = {}
        for s in after.resource_samples(filled.study_id):
            per_trial[s["trial_id"]] = per_trial.get(s["trial_id"], 0) + 1
        for t in trials:
            assert same_json(after.trial_result(t["trial_id"]), run_result.raw)
            assert per_trial[t["trial_id"]] == 2000
        # and the store takes writes again (SQLite: the dead writer's lock is gone)
        after.save_trial(cell_id, 99, run_result, [])
