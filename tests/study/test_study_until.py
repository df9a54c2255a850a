"""`replicates: {min, max, until}` on real servers: a quiet server (the same CPU cost per request at
every start) reaches its interval in few replicates; a noisy one (a start at 200 µs per request, the
next at 600 µs: capacities about 5,000/s and 1,700/s in turn) never does, and runs to ``max``. Each
cell's capacity says how many replicates it took and why it stopped. (tests/study/test_study_runs.py
checks the same decisions against a simulated server, in-process, with exact figures.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.studies import caplab, free_port, json_out, knownserver, knownserver_sut, write_study

pytestmark = pytest.mark.slow  # seven to nine capacity searches

MIN, MAX, UNTIL = 2, 4, 0.4


def study(port: int, starts: Path) -> dict[str, Any]:
    # Each start of the noisy cell's server counts itself in a file; every other start costs three
    # times the CPU per request. `exec` keeps the server the start command's own process.
    cost = "$((200 + {noisy} * (n % 2) * 400))"
    start = (
        f"n=$(cat {starts}/{{noisy}} 2>/dev/null || echo 0); echo $((n + 1)) > {starts}/{{noisy}}; "
        f"exec {knownserver(port)} --cpu-us {cost}"
    )
    return {
        "name": "until",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, start=start),
        "factors": {"noisy": [0, 1]},
        # 20 % precision: a search's bracket is ±10 %, under the 40 % the quiet cell must reach (the
        # interval is never narrower than the brackets' mean); 0.4 s trials, four to six a search.
        "load": {"duration": "400ms", "warmup": "200ms"},
        "slo": ["p95<=50ms"],
        "search": {"precision": "20%", "trial": "400ms", "repeats": 1, "start": 1500},
        "replicates": {"min": MIN, "max": MAX, "until": f"{UNTIL:.0%}"},
    }


def test_a_noisy_server_takes_more_replicates_than_a_quiet_one_and_stops_at_max(tmp_path: Path) -> None:
    path = write_study(tmp_path / "until.yaml", study(free_port(), tmp_path))
    done = caplab("run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "--no-report", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cells = {c["factors"]["noisy"]: c["metrics"]["capacity"] for c in json_out(done)["cells"]}
    quiet, noisy = cells[0], cells[1]
    # The noisy server started once per replicate, alternating its cost: its capacities alternate.
    assert (tmp_path / "1").read_text().strip() == str(noisy["replicate_count"])
    found = [r["capacity_rps"] for r in noisy["replicates"]]
    assert min(found[0::2]) > 2 * max(found[1::2]), found
    assert noisy["replicate_count"] == MAX and noisy["stopped"].startswith(f"max {MAX} reached")
    assert noisy["half_width"] > UNTIL
    assert MIN <= quiet["replicate_count"] < MAX, quiet
    assert quiet["half_width"] <= UNTIL and quiet["stopped"].startswith("interval ±")
    # The reported half-width is the capacity's own interval, relative to it.
    for capacity in (quiet, noisy):
        low, high = capacity["ci95"]
        assert capacity["half_width"] == pytest.approx((high - low) / 2 / capacity["capacity_rps"], rel=1e-6)
        assert capacity["until"] == pytest.approx(UNTIL)
