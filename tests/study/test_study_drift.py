"""The drift check on a real study: one fixed-load cell run as eight replicates, its server made
slower from the fifth start on — each start reads how many came before from a file and, from the
fifth, spends ten times the CPU on every request, as a machine slowed halfway would. The study's
methodology flags the drift with its size. (The same server left alone is not tested here: at 95 %
with eight runs, one study in 35 that did not drift is flagged — tests/analysis/test_analysis_drift.py
holds that rate on synthetic runs.)"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from caplab.report.document import load_results
from caplab.store import Store
from support.studies import caplab, free_port, knownserver_sut, write_study

pytestmark = pytest.mark.slow

REPLICATES = 8
"""The fewest runs of one cell whose 95 % interval can exclude no change."""


def _start(port: int, counter: Path, slowed: bool) -> str:
    """A start command that counts its starts in ``counter``; ``slowed``: from the fifth on, the
    server burns 5 ms of CPU per request instead of 0.3 ms."""
    server = shlex.join([sys.executable, "-m", "caplab.systems.knownserver", "--port", str(port), "--cpu-us"])
    later = "5000" if slowed else "300"
    return (
        f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
        f'if [ "$n" -lt {REPLICATES // 2} ]; then us=300; else us={later}; fi; exec {server} "$us"'
    )


def _drift_item(tmp_path: Path, slowed: bool) -> dict[str, Any]:
    port = free_port()
    study = {
        "name": "drift",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, start=_start(port, tmp_path / "starts", slowed)),
        # 100/s: the slowed server is half busy, so its median latency is about its 5 ms of work.
        "load": {"rate": 100, "duration": "500ms", "warmup": "200ms"},
        "replicates": REPLICATES,
    }
    db = f"sqlite:///{tmp_path / 'd.db'}"
    done = caplab("run", write_study(tmp_path / "study.yaml", study), "--db", db, "--no-report", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with Store(db) as store:
        results = load_results(store, store.resolve_study("latest"))
    runs = results["cells"][0]["metrics"]["replicated"]
    assert runs is not None and runs["replicates"] == REPLICATES
    return dict(next(i for i in results["methodology"] if i["principle"] == "drift"))


def test_a_server_slowed_halfway_through_the_study_is_flagged(tmp_path: Path) -> None:
    item = _drift_item(tmp_path, slowed=True)
    assert item["grade"] == "warn", item
    reason = item["reason"]
    assert reason.startswith("the machine changed during the study: later runs "), reason
    assert "slower than earlier ones" in reason and "8 runs of one cell" in reason
    # p50 from about 0.5 ms to 5 ms or more: the later runs at least half as fast.
    slower = int(reason.split("later runs ")[1].split("%")[0])
    assert slower >= 50, reason
