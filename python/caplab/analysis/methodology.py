"""The methodology checklist: each principle of a reproducible performance study (Papadopoulos et
al., TSE 2019) graded from the study's own record, with the reason in its figures and, where it
falls short, what to write in the study file.

How the runs were made — repeated experiments, intervals on the figures, the order they ran in —
is graded here; what they ran on (warm-up and steady state, the generator, the environment,
units, cost) in ``methodology_setup``. A grade is the analysis's: the report only lays it out.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from caplab.analysis.drift import DriftVerdict, drift, replicates_needed
from caplab.analysis.methodology_setup import cost, environment, generator, steady_state, units
from caplab.analysis.methodology_types import (
    CellEvidence,
    Change,
    Check,
    Grade,
    Principle,
    StudyEvidence,
    cells_text,
)

__all__ = ["grade_study", "intervals", "machine_drift", "order", "repetition"]

REPLICATES = 3
"""What the changes ask for: the fewest runs whose t-interval (t = 4.30 at two degrees of freedom)
is not mostly the quantile's width."""

REPLICATE_CHANGE = Change(
    f"replicates: {REPLICATES}",
    f"each cell's system is then started {REPLICATES} times afresh and its capacity given with a 95 % "
    "interval over those runs: runs differ more than trials within one run",
)


def grade_study(study: StudyEvidence) -> list[Check]:
    """Every principle graded, in the checklist's order (``Principle``)."""
    return [
        repetition(study),
        intervals(study),
        order(study),
        machine_drift(study),
        steady_state(study),
        generator(study),
        environment(study),
        units(study),
        cost(study),
    ]


def _cv(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def _spread(study: StudyEvidence) -> str:
    """The largest run-to-run (or trial-to-trial) spread of a cell's figure, as a clause."""
    spreads: list[tuple[float, CellEvidence, str]] = []
    for c in study.cells:
        replicated = c.figure.replicate_values if c.figure else ()
        if (cv := _cv(replicated)) is not None:
            spreads.append((cv, c, "runs"))
        elif (cv := _cv([t.throughput for t in c.trials if t.throughput is not None])) is not None:
            spreads.append((cv, c, "trials"))
    if not spreads:
        return ""
    cv, cell, between = max(spreads, key=lambda s: s[0])
    where = cells_text([cell])
    return f"; the figures varied by up to {cv:.1%} (coefficient of variation) between {between}, in {where}"


def repetition(study: StudyEvidence) -> Check:
    """Repeated experiments: a figure from one run says nothing of the next; replicates (a fresh
    start of the system each) show the run-to-run spread, repeated trials within a run only the
    smaller trial-to-trial one."""
    n = study.replicates
    spread = _spread(study)
    if n >= REPLICATES:
        reason = f"each cell ran {_runs_text(study)}, a fresh start of the system each{spread}"
        return Check(Principle.REPETITION, Grade.PASS, reason)
    if n == 2:
        reason = f"each cell ran twice (replicates: 2): an interval from two runs is wide (t = 12.7){spread}"
        return Check(Principle.REPETITION, Grade.WARN, reason, REPLICATE_CHANGE)
    key, per_run = (
        ("search.repeats", study.search_repeats) if study.search_repeats else ("load.repeat", study.repeat)
    )
    if per_run >= 2 and not study.job:
        what = "confirmation trials at the capacity" if key == "search.repeats" else "trials"
        reason = (
            f"each cell's system started once (replicates: 1); its {per_run} {what} ({key}: {per_run}) "
            f"repeat within that run{spread}: the trial-to-trial spread, not the larger run-to-run one"
        )
        return Check(Principle.REPETITION, Grade.WARN, reason, REPLICATE_CHANGE)
    reason = (
        f"each cell's figure rests on one run of the system (replicates: 1) and one measured trial "
        f"({key}: {per_run}): nothing says how far another run would land"
    )
    return Check(Principle.REPETITION, Grade.FAIL, reason, REPLICATE_CHANGE)


def _runs_text(study: StudyEvidence) -> str:
    """How many runs each cell made: the setting's count, or — where ``until`` added replicates
    to a cell until its interval was tight enough — the range the cells took."""
    counts = [c.figure.replicates for c in study.ran if c.figure is not None]
    if not counts or max(counts) <= study.replicates:
        return f"{study.replicates} times (replicates: {study.replicates})"
    low, high = min(counts), max(counts)
    taken = f"{low} times" if low == high else f"{low} to {high} times"
    return f"{taken} (at least {study.replicates}, more added until each interval was tight enough)"


def _search_change(study: StudyEvidence) -> Change:
    slo = "" if study.slo else ', slo: ["p99<=100ms"]'
    return Change(
        f"search: {{precision: 5%{slo}}}\nreplicates: {REPLICATES}",
        "a fixed load's throughput is the load offered, not a capacity, and has no interval: a capacity "
        f"searched in {REPLICATES} replicates carries a 95 % interval over them",
    )


def intervals(study: StudyEvidence) -> Check:
    """Intervals on every headline figure: a capacity from replicates carries a confidence
    interval; one search's bracket only says how precisely that run placed it."""
    figures = [(c, c.figure) for c in study.cells if c.figure is not None]
    if not figures:
        return Check(Principle.INTERVALS, Grade.WARN, "no cell produced a figure to give an interval")
    bare = [c for c, f in figures if not f.has_interval]
    brackets = [c for c, f in figures if f.has_interval and f.interval == "search"]
    n = len(figures)
    if bare:
        searched = all(f.unit != "req/s" or f.interval is not None for _, f in figures) and not study.job
        what = "capacity" if searched else "figure"
        reason = (
            f"{len(bare)} of {n} headline figures carry no interval ({cells_text(bare)}): each {what} is "
            "one number, with nothing to say how far another run would land"
        )
        has_search = study.search_repeats is not None
        change = REPLICATE_CHANGE if has_search or study.job else _search_change(study)
        return Check(Principle.INTERVALS, Grade.FAIL, reason, change)
    if brackets:
        reason = (
            f"{len(brackets)} of {n} capacities carry only their search's bracket ({cells_text(brackets)}): "
            "how precisely one run placed the capacity, not a confidence interval"
        )
        return Check(Principle.INTERVALS, Grade.WARN, reason, REPLICATE_CHANGE)
    runs = sorted({f.replicates for _, f in figures})
    counts = f"{runs[0]}" if len(runs) == 1 else f"{runs[0]}–{runs[-1]}"
    reason = f"all {n} headline figures carry a 95 % confidence interval over {counts} replicates"
    return Check(Principle.INTERVALS, Grade.PASS, reason)


def _order_change(study: StudyEvidence) -> Change:
    """``order: interleaved``, with replicates where each cell ran once: spread across the study,
    a cell's runs meet the machine's drift at different times, and their interval contains it."""
    if study.replicates >= 2:
        return Change(
            "order: interleaved",
            "every cell's replicates then run spread across the study in a random order drawn from a seed "
            "(recorded, so a rerun repeats it): drift of the machine falls on every configuration alike",
        )
    return Change(
        f"replicates: {REPLICATES}\norder: interleaved",
        f"each cell then runs {REPLICATES} times, its runs spread across the study in a random order drawn "
        "from a seed (recorded): drift of the machine widens every configuration's interval alike "
        "instead of reading as a difference between them",
    )


def order(study: StudyEvidence) -> Check:
    """Randomised order: cells run one after another let a machine's drift (another tenant, heat,
    a filling disk) fall on the later configurations alone and read as their difference; runs
    interleaved in a random order spread it over all of them (Abedi & Brecht, ICPE 2017)."""
    ran = sorted(study.ran, key=lambda c: (c.started_at or "", c.index))
    if len(ran) <= 1:
        reason = "one configuration ran: there is no other for the machine's drift to be mistaken for"
        return Check(Principle.ORDER, Grade.PASS, reason)
    span = f"from {_clock(ran[0].started_at)} to {_clock(ran[-1].started_at)}"
    seed = f", seed {study.seed}" if study.seed is not None else ""
    if study.order == "interleaved" and study.replicates >= 2:
        reason = (
            f"the {len(ran)} cells' replicates ran interleaved in a random order (order: interleaved{seed}), "
            "so drift of the machine during the study fell on every configuration alike and is inside "
            "their intervals"
        )
        return Check(Principle.ORDER, Grade.PASS, reason)
    if study.order == "interleaved":
        reason = (
            f"the {len(ran)} cells ran in a random order (order: interleaved{seed}, first started {span}) "
            "but once each: drift of the machine fell on whichever cells ran late, and one run a cell "
            "cannot show it"
        )
        return Check(Principle.ORDER, Grade.WARN, reason, _order_change(study))
    indices = [c.index for c in ran]
    sequence = (
        "in matrix order"
        if indices == sorted(indices)
        else "in the order " + ", ".join(f"#{i}" for i in indices)
    )
    back_to_back = f", each cell's {study.replicates} replicates back to back" if study.replicates > 1 else ""
    reason = (
        f"the {len(ran)} cells ran one after another {sequence} ({span}){back_to_back}, not in a "
        "randomised order: drift of the machine during the study falls on the later cells alone"
    )
    return Check(Principle.ORDER, Grade.WARN, reason, _order_change(study))


def _clock(at: str | None) -> str:
    """``2026-11-27T20:39:46+00:00`` → ``20:39:46``."""
    return (at or "?").partition("T")[2][:8] or (at or "?")


DRIFT_CHANGE = Change(
    "order: interleaved",
    "find what changed on the machine while the study ran (another tenant, heat, a filling disk, a CPU "
    "quota) and run the study again; with every cell's replicates spread across the study in a seeded "
    "random order, a drift falls on every configuration alike instead of on the later ones",
)
INTERLEAVED_DRIFT_CHANGE = Change(
    None,
    "find what changed on the machine while the study ran (another tenant, heat, a filling disk, a CPU "
    "quota) and run the study again: its runs were interleaved, so the drift fell on every "
    "configuration alike, but every figure's interval is wider for it",
)


def machine_drift(study: StudyEvidence) -> Check:
    """Drift of the machine itself: each cell's later runs against its earlier ones (analysis.drift).
    A machine that changed during the study mixes two machines in every figure; in cells run one
    after another it reads as the later configurations' difference."""
    found = drift(study.runs)
    if found.verdict is DriftVerdict.NOT_TESTABLE:
        reason = f"whether the machine changed during the study cannot be tested: {found.reason}"
        return Check(Principle.DRIFT, Grade.WARN, reason, _drift_change(study))
    faster = {r.higher_is_faster for r in study.runs}
    what = " and ".join(
        w for w, kind in (("capacities", True), ("fixed loads' median latencies", False)) if kind in faster
    )
    cells = "one cell" if found.cells == 1 else f"{found.cells} cells"
    rests = f"{found.runs} runs of {cells}, their {what}, {found.pairs} pairs of runs of one cell"
    if found.drifted:
        reason = (
            f"the machine changed during the study: {found.size_text()} ({rests}; a 95 % interval that "
            "excludes no change): every figure mixes the machine before and after"
        )
        change = INTERLEAVED_DRIFT_CHANGE if study.order == "interleaved" else DRIFT_CHANGE
        return Check(Principle.DRIFT, Grade.WARN, reason, change)
    reason = (
        f"no drift of the machine shown: {found.size_text()} ({rests}; the 95 % interval includes no change)"
    )
    return Check(Principle.DRIFT, Grade.PASS, reason)


def _drift_change(study: StudyEvidence) -> Change:
    """The replicates that make the check testable over the cells that ran; none to write where the
    study already asks for them (its runs kept no start time, or too few completed)."""
    needed = replicates_needed(max(len(study.ran), 1))
    if study.replicates >= needed:
        return Change(
            None,
            "run the study again: too few of its runs completed with their start time recorded (a study "
            "stored before caplab kept one per replicate has none)",
        )
    cells = "one cell" if len(study.ran) <= 1 else f"{len(study.ran)} cells"
    return Change(
        f"replicates: {needed}",
        f"each cell's later runs are compared with its earlier ones; over {cells}, {needed} runs each are "
        "the fewest whose 95 % interval can exclude no change",
    )
