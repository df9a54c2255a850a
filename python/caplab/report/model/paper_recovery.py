"""A failover paper's recovery times beside ours: the study's ``paper:`` block gives, per action,
the paper's group-level and database-level seconds at each of its database counts, keyed by the
count of ours that stands for it (the counts are scaled to this machine, so the block says which
of the paper's each of ours stands for), and the cells ours are read from (the paper's
conditions: ``cells: {traffic: 0%}`` for its static test)::

    paper:
      source: "seed 004 …: its hardware, not this machine"
      cells: {traffic: "0%"}
      databases: {50: 200, 100: 400}            # ours: the paper's
      recovery:                                 # ours: [group s, database s], the paper's
        switchover: {50: [0.8, 2], 100: [1, 35]}

Ours are the medians over the selected trials of the group time and of the last database's first
commit (the paper's "DB level"). The values are the paper's hardware's and its mechanism's: compare
how each grows with the database count, not the seconds."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from caplab.json_types import JsonObject
from caplab.report.model.types import CellResult, PaperRecovery, PaperRecoveryRow
from caplab.units import is_number


def paper_recovery(spec: JsonObject, cells: list[CellResult]) -> PaperRecovery | None:
    """The comparison, or None when the study's paper block has no ``recovery:`` table."""
    paper = spec.get("paper")
    if not isinstance(paper, Mapping) or not isinstance(paper.get("recovery"), Mapping):
        return None
    raw_cells = paper.get("cells")
    selection = {str(k): str(v) for k, v in raw_cells.items()} if isinstance(raw_cells, Mapping) else {}
    raw_counts = paper.get("databases")
    theirs_for = {str(k): v for k, v in raw_counts.items()} if isinstance(raw_counts, Mapping) else {}
    chosen = [
        c for c in cells if all(str(c["factors"].get(name)) == value for name, value in selection.items())
    ]
    rows: list[PaperRecoveryRow] = []
    for action, table in paper["recovery"].items():
        if not isinstance(table, Mapping):
            continue
        for count, figures in table.items():
            pair = figures if isinstance(figures, Sequence) and not isinstance(figures, str) else []
            trials = [
                f
                for c in chosen
                for f in c["failover"]
                if f["action"] == str(action) and f["databases"] == int(count)
            ]
            theirs = theirs_for.get(str(count))
            rows.append(
                {
                    "action": str(action),
                    "databases": int(count),
                    "paper_databases": int(theirs) if is_number(theirs) else None,
                    "paper_group_s": float(pair[0]) if len(pair) > 0 and is_number(pair[0]) else None,
                    "paper_database_s": float(pair[1]) if len(pair) > 1 and is_number(pair[1]) else None,
                    "group_s": _median([f["group_s"] for f in trials]),
                    "database_s": _median([f["max_s"] for f in trials]),
                    "trials": len(trials),
                }
            )
    return {"source": str(paper.get("source") or "the seed paper"), "cells": selection, "rows": rows}


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None
