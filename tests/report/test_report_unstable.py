"""A capacity the search confirmed below failing rounds (experiments/capacity/search.py) reaches the
report as such: the cell's capacity reads "(unstable above)", and the search's observations say what
failed above it — the stall or backlog — as a warning, from the stored answer's ``unstable``."""

from __future__ import annotations

from typing import Any, cast

from caplab.report.model.cells import cell_result
from caplab.report.model.types import Measured
from caplab.report.text.observations import search_observations
from caplab.store.document import CellRecord

STALL = "stalled 1.5 s (1.0–2.5 s into the trial): almost no replies while 40 requests were in flight"


def stored_cell(unstable: str | None) -> dict[str, Any]:
    """A searched cell as the store keeps it: its capacity answer and its search's trials."""
    trials = [
        {"phase": "bracket", "load": 20.0, "passed": True, "reasons": []},
        {"phase": "confirm", "load": 28.9, "passed": False, "reasons": [STALL]},
        {"phase": "confirm", "load": 20.0, "passed": True, "reasons": []},
    ]
    capacity = {
        "model": "open",
        "found": True,
        "capacity_rps": 20.0,
        "ci95": [20.0, 28.9],
        "interval": "search",
        "message": "SLO held in 1 of 1 confirmation trials at 20",
        "search_s": 30.0,
        "unstable": unstable,
    }
    return {
        "index": 0,
        "factors": {"setup": "hdd"},
        "status": "complete",
        "metrics": {"capacity": capacity, "search_trials": trials, "limit": None},
        "resources": {},
    }


def observed(unstable: str | None) -> list[str]:
    cell = cell_result(CellRecord.from_json(stored_cell(unstable), "cell"), {})
    assert cell["metrics"]["capacity"] is not None
    assert cell["metrics"]["capacity"]["unstable"] == unstable
    return [o["text"] for o in search_observations(cast(Measured, {"cells": [cell]}))]


def test_an_unstable_capacity_is_a_warning_naming_what_failed_above_it() -> None:
    texts = observed(f"at 28.9: {STALL}")
    [line] = [t for t in texts if "unstable above it" in t]
    assert line.startswith("setup=hdd: capacity 20") and STALL in line


def test_a_capacity_confirmed_as_found_says_nothing_of_instability() -> None:
    assert not any("unstable" in t for t in observed(None))
