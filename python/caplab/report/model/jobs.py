"""A job study's figures for the report: each phase's rate per cell, the shape of the rate against
the job's size (the factor its phases' ``items`` name), and the paper's own figures beside ours
where the study file gives them (``paper:``, labelled as the paper's hardware)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from caplab.analysis.size_fit import fit_size
from caplab.json_types import (
    EMPTY,
    JsonObject,
    as_object,
    items,
    member,
    number,
    optional_member,
    text,
)
from caplab.report.model.scenario import goal_of
from caplab.report.model.spec_defaults import DEFAULT_HEADROOM
from caplab.report.model.types import (
    CapacityEntry,
    CellResult,
    JobEndurance,
    JobFit,
    JobRow,
    Jobs,
    PaperRow,
    PaperTable,
)
from caplab.report.model.wear import endurance_rows
from caplab.store.document import CellRecord
from caplab.units import is_number

_REF = re.compile(r"^\{(\w+)\}$")


def _phases(spec: JsonObject) -> list[JsonObject]:
    """The job's phases as written (a phase that is not an object is left out)."""
    return [as_object(p) for p in items(member(spec, "job"), "phases") if isinstance(p, Mapping)]


def size_factor(spec: JsonObject) -> str | None:
    """The factor a phase's ``items`` is: the job's size."""
    for phase in _phases(spec):
        m = _REF.match(str(phase.get("items", "")))
        if m:
            return m.group(1)
    return None


def rating_phase(spec: JsonObject) -> str | None:
    """The phase whose items/s rates a configuration: ``goal.phase``, else the job's last (the one
    that finishes the job)."""
    goal = member(spec, "goal")
    if goal.get("phase"):
        return str(goal["phase"])
    names = [str(p.get("name")) for p in _phases(spec)]
    return names[-1] if names else None


def _interval(value: object) -> list[float] | None:
    """A phase's 95 % interval ``[low, high]`` as stored; None when there is none."""
    if not isinstance(value, list):
        return None
    return [x for x in value if isinstance(x, int | float) and not isinstance(x, bool)]


def _phase_rows(
    raw: CellRecord, cell: CellResult, paper: Mapping[object, object], size: str | None
) -> list[JobRow]:
    """One row per phase of the cell's job, with the paper's figure for its configuration."""
    phases = member(raw.metrics.part("job") or EMPTY, "phases")
    factors = cell["factors"]
    group = next((str(v) for k, v in factors.items() if k != size), "")
    rows: list[JobRow] = []
    for name, found in phases.items():
        phase = as_object(found)
        theirs = _table(_table(paper.get(name)).get(group))
        reference = theirs.get(str(factors.get(size))) if size else None
        total = cell["cost"]["total"] if cell["cost"] else None
        rate = number(phase, "items_per_s")
        rows.append(
            {
                "cell": raw.index,
                "label": cell["label"],
                "factors": factors,
                "phase": str(name),
                "items_per_s": rate,
                "ci95": _interval(phase.get("ci95")),
                "wall_s": number(phase, "wall_s"),
                "limit": text(member(phase, "limit"), "resource"),
                "paper": float(reference) if isinstance(reference, int | float | str) else None,
                "cost_per_item_s": total / rate if total is not None and rate else None,
            }
        )
    return rows


def _table(value: object) -> Mapping[object, object]:
    """One of the paper's tables, keyed as written (a size stays a number); empty when absent."""
    return value if isinstance(value, Mapping) else {}


def job_entries(spec: JsonObject, raw_cells: Sequence[CellRecord], cells: list[CellResult]) -> Jobs | None:
    if optional_member(spec, "job") is None:
        return None
    size = size_factor(spec)
    paper_block = _table(spec.get("paper"))
    paper = _table(paper_block.get("job"))
    source = str(paper_block.get("source") or "")
    by_index = {c["index"]: c for c in cells}
    rows = [row for raw in raw_cells for row in _phase_rows(raw, by_index[raw.index], paper, size)]
    worn: list[JobEndurance] = [
        {"cell": c["index"], "label": c["label"], "volumes": rows_}
        for c in cells
        if (rows_ := endurance_rows(c))
    ]
    phase = rating_phase(spec)
    return {
        "size_factor": size,
        "paper_source": source or None,
        "rows": rows,
        "fits": _fits(rows, size),
        "endurance": worn,
        "rated_by": phase,
        "paper_tables": _side_by_side(rows, paper, size),
        "capacity": _capacity(spec, rows, cells, phase, size),
    }


def _capacity(
    spec: JsonObject, rows: list[JobRow], cells: list[CellResult], phase: str | None, size: str | None
) -> list[CapacityEntry]:
    """Each configuration rated by ``phase``'s items/s, as the recommendation sizes from it. The size
    factor is the job's work, not a choice of hardware: a configuration is rated at the largest size
    it completed (the hardest job; rates fall with size), unless the goal is met for each size
    (``goal.for_each`` names it)."""
    goal = goal_of(spec)
    headroom = goal["headroom"] if goal else DEFAULT_HEADROOM
    complete = {c["index"] for c in cells if c["status"] == "complete"}
    mine = [r for r in rows if r["phase"] == phase and r["cell"] in complete and is_number(r["items_per_s"])]
    collapsed = size is not None and size not in (goal["for_each"] if goal else [])
    if collapsed and size is not None:
        largest: dict[str, JobRow] = {}
        for r in mine:
            group = repr({k: v for k, v in r["factors"].items() if k != size})
            n, held = r["factors"].get(size), largest.get(group)
            before = held["factors"].get(size) if held else None
            if held is None or (is_number(n) and (not is_number(before) or n > before)):
                largest[group] = r
        mine = [r for r in mine if any(r is kept for kept in largest.values())]
    repeats = member(spec, "job").get("repeat")
    out: list[CapacityEntry] = []
    for r in mine:
        rate = float(r["items_per_s"] or 0.0)
        ci = r["ci95"]
        out.append(
            {
                "cell": r["cell"],
                # rated at its largest size, the configuration is named without it: the size is the
                # job's work, not a choice ("choose layout=external", not "objects=200000 …")
                "label": _without(r["label"], size) if collapsed and size else r["label"],
                "factors": r["factors"],
                "basis": "job",
                "value": rate,
                "unit": "items/s",
                "ci95": [ci[0], ci[1]] if ci else [None, None],
                "interval": "replicates" if ci else None,
                "replicates": repeats if isinstance(repeats, int) and repeats > 0 else 1,
                "indistinguishable": [],
                "found": True,
                "message": None,
                "trials": None,
                "search_s": None,
                "consistency": None,
                "limit": r["limit"],
                "headroom": headroom,
                "rate": rate,
                "rated": rate * (1.0 - headroom),
                "rated_unit": "items/s",
            }
        )
    return out


def _without(label: str, factor: str) -> str:
    """A cell's label less ``factor=…`` (the label itself when nothing else names the cell)."""
    rest = " ".join(word for word in label.split() if not word.startswith(f"{factor}="))
    return rest or label


def _fits(rows: list[JobRow], size: str | None) -> list[JobFit]:
    if size is None:
        return []
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in rows:
        n, rate = r["factors"].get(size), r["items_per_s"]
        if isinstance(n, int | float) and rate is not None:
            group = " ".join(f"{k}={v}" for k, v in r["factors"].items() if k != size)
            groups.setdefault((r["phase"], group), []).append((float(n), rate))
    out: list[JobFit] = []
    for (phase, group), points in groups.items():
        fit = fit_size(points)
        out.append(
            {
                "phase": phase,
                "group": group,
                "factor": size,
                "points": [[n, r] for n, r in sorted(points)],
                "fit": fit.as_dict() if fit else None,
            }
        )
    return out


def _group(factors: Mapping[str, object], size: str | None) -> str:
    """The group a cell is in for the paper's figures: its first factor other than the size."""
    return next((str(v) for k, v in factors.items() if k != size), "")


def _figure(value: object) -> float | None:
    if not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _side_by_side(rows: list[JobRow], paper: Mapping[object, object], size: str | None) -> list[PaperTable]:
    """Per phase with the paper's figures: ours and the paper's per group, at every size either ran
    (the paper's sizes we did not run shown with its figures alone, and ours it has none for)."""
    if size is None or not paper:
        return []
    out: list[PaperTable] = []
    phases = list(dict.fromkeys([*(r["phase"] for r in rows), *paper]))
    for phase in phases:
        theirs = _table(paper.get(phase))
        if not theirs:
            continue
        ours: dict[tuple[str, float], float | None] = {}
        for r in rows:
            n = _figure(r["factors"].get(size))
            if r["phase"] == phase and n is not None:
                ours[(_group(r["factors"], size), n)] = r["items_per_s"]
        groups = list(dict.fromkeys([*(g for g, _ in ours), *(str(g) for g in theirs)]))
        figures = {
            (str(g), n): _figure(v)
            for g, by_size in theirs.items()
            for k, v in _table(by_size).items()
            if (n := _figure(k)) is not None
        }
        sizes = sorted({n for _, n in ours} | {n for _, n in figures})
        table_rows: list[PaperRow] = [
            {
                "size": n,
                "ours": [ours.get((g, n)) for g in groups],
                "paper": [figures.get((g, n)) for g in groups],
            }
            for n in sizes
        ]
        out.append({"phase": str(phase), "groups": groups, "rows": table_rows})
    return out
