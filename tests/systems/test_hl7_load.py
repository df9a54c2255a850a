"""caplab's own load engine against the hl7 engine: ``caplab load tcp://… --framing mllp`` with the
engine's template sends real ADT messages, and every request the load engine completed is a row
queued and a file written, no more and no less."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.hl7_client import Start, db_rows, written_files

CAPLAB = Path(sys.executable).parent / "caplab"


@pytest.mark.slow
def test_caplab_load_over_mllp_completes_what_the_engine_queued_and_wrote(
    start_hl7: Start, tmp_path: Path
) -> None:
    template = tmp_path / "adt.hl7"
    made = subprocess.run(
        [sys.executable, "-m", "caplab.systems.hl7", "template", "--kind", "adt", "--prefix", "L-"],
        capture_output=True,
        text=True,
        check=True,
    )
    template.write_text(made.stdout)
    engine = start_hl7(2)
    load = [str(CAPLAB), "load", f"tcp://127.0.0.1:{engine.ports[1]}", "--framing", "mllp"]
    load += [
        "--body-file",
        str(template),
        "--template",
        "--rate",
        "150",
        "-d",
        "2s",
        "--warmup",
        "0s",
        "--json",
    ]
    done = subprocess.run(load, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["errors"] == 0 and result["dropped"] == 0 and result["in_flight_at_end"] == 0
    assert result["completed"] == result["sent"] > 0
    samples = engine.wait_drained()
    rows = db_rows(engine.data_dir / "queue.db", "SELECT count(*) FROM messages WHERE channel = 1")[0][0]
    assert samples['hl7_queued_total{channel="1"}'] == rows == result["completed"]
    assert samples['hl7_received_total{channel="1"}'] == result["completed"]
    files = written_files(engine.out_dir or Path(), 1)
    assert len(files) == samples['hl7_written_total{channel="1"}'] == result["completed"]
    assert all(f.startswith("L-") for f in files)
