"""The Recovery section's database-level part (the availability-group paper's table): per failover
trial the group-level time and the spread of the databases' times, per configuration the success
rate k/K with each failure's reason, whether recovery time grows with the number of databases —
fitted (analysis/size_fit), not eyeballed — and the replication behind it (log written, send,
write, flush and replay lag, redo rate per node)."""

from __future__ import annotations

from collections.abc import Callable

from caplab import units as u
from caplab.analysis.size_fit import fit_size
from caplab.report.layout.blocks import Column, Table, TableCell, num_cell, text_cell
from caplab.report.layout.tables import drop_empty_columns
from caplab.report.model.types import CellResult, DatabaseFailover, FailoverPhases, Results
from caplab.report.text.recovery import PHASE_NAMES

FIT_MIN_SIZES = 3
"""Database counts needed before a shape is fitted to recovery time against them."""


def _factor_names(results: Results) -> list[str]:
    m = results["matrix"]
    return list(m.get("naming") or m["factors"])


def _factor_cells(results: Results, cell: CellResult) -> list[TableCell]:
    out = []
    for name in _factor_names(results):
        v = cell["factors"].get(name)
        shown = u.cell_label({"": v}).removeprefix("=")
        out.append(num_cell(v, shown) if u.is_number(v) else text_cell(shown))
    return out


def _factor_columns(results: Results) -> list[Column]:
    values = results["matrix"]["factors"]
    return [Column(n, all(u.is_number(v) for v in values[n])) for n in _factor_names(results)]


def _cell_columns(results: Results) -> list[Column]:
    """Each failover table's first columns: the cell's number, then its factors."""
    return [Column("#", True), *_factor_columns(results)]


def _cell_cells(results: Results, cell: CellResult) -> list[TableCell]:
    return [num_cell(cell["index"], str(cell["index"])), *_factor_cells(results, cell)]


def _seconds(value: float | None) -> TableCell:
    return num_cell(value, u.DASH if value is None else f"{value:.2f}")


def _resolution_note(widths: set[float]) -> str:
    """What the databases' times are known to: the interval, or a range where some databases were
    probed more slowly than it (their gap between requests is their resolution)."""
    if not widths:
        return ""
    if len(widths) == 1:
        return f" (± {max(widths):.2g} s, the interval series' resolution)"
    return (
        f" (± {min(widths):.2g}–{max(widths):.2g} s: the interval series' resolution, or a database's "
        "gap between requests where longer)"
    )


def database_recovery_table(results: Results) -> Table | None:
    """One row per failover trial read database by database."""
    rows = []
    for c in results["cells"]:
        for f in c["failover"]:
            missing = len(f["not_recovered"])
            verdict = (
                text_cell(u.DASH)
                if f["success"] is None
                else text_cell("success", "good")
                if f["success"]
                else text_cell("; ".join(f["reasons"]), "bad")
            )
            rows.append(
                [
                    *_cell_cells(results, c),
                    num_cell(f["trial"] + 1, str(f["trial"] + 1)),  # stored 0-based, shown from 1
                    text_cell(f["action"]),
                    num_cell(f["databases"], u.num(f["databases"])),
                    _seconds(f["group_s"]),
                    _seconds(f["p50_s"]),
                    _seconds(f["p95_s"]),
                    _seconds(f["max_s"]),
                    TableCell(u.num(missing), missing, "bad" if missing else ""),
                    num_cell(f["failed"], u.num(f["failed"])),
                    verdict,
                ]
            )
    if not rows:
        return None
    columns = [
        *_cell_columns(results),
        Column("trial", True),
        Column("action"),
        Column("databases", True),
        Column("group writable", True, "s"),
        Column("databases p50", True, "s"),
        Column("p95", True, "s"),
        Column("max", True, "s"),
        Column("never back", True),
        Column("failed", True, "transactions"),
        Column("verdict", wrap=True),
    ]
    widths = {f["resolution_s"] for c in results["cells"] for f in c["failover"] if f["resolution_s"]}
    resolution = _resolution_note(widths)
    note = (
        "Group writable: from the fault (the role change's start, or the instant it reported for its "
        "fault) until a primary accepted writes again, as the system reported it. Databases: from the "
        "fault until each database's first commit after its "
        f"outage, read from its own interval series{resolution}; p50 and p95 are nearest-rank over the "
        "databases that came back, max is the last of them (the paper's DB level). Verdict: every "
        "database back within the study's recovery SLO, and nothing acknowledged lost where the "
        "replication mode promises none."
    )
    return Table(columns, rows, caption="Failover by database", note=note)


def success_table(results: Results) -> Table | None:
    """Per configuration: k of K failovers met the recovery SLO, and why the others did not."""
    rows = []
    for c in results["cells"]:
        s = c["success"]
        if s is None:
            continue
        why = "; ".join(f"trial {int(f['trial']) + 1}: {', '.join(f['reasons'])}" for f in s["failures"])
        tone = "good" if s["successes"] == s["trials"] else "bad"
        rows.append(
            [
                *_cell_cells(results, c),
                TableCell(s["text"], s["successes"] / s["trials"] if s["trials"] else None, tone),
                text_cell(free(why)),
            ]
        )
    if not rows:
        return None
    columns = [
        *_cell_columns(results),
        Column("success", True, "k/K"),
        Column("failures", wrap=True),
    ]
    return Table(columns, rows, caption="Failover success rate")


def free(text: str) -> str:
    return text or u.DASH


def _points(results: Results, pick: Callable[[DatabaseFailover], float | None]) -> list[tuple[float, float]]:
    return [
        (float(f["databases"]), value)
        for c in results["cells"]
        for f in c["failover"]
        if (value := pick(f)) is not None and value > 0
    ]


def recovery_fit_lines(results: Results) -> list[str]:
    """Whether recovery time grows with the number of databases: a linear and a power-law shape
    fitted to every trial's time against its database count, group and database level."""
    out = []
    for level, pick in (
        ("Database level (the last database back)", lambda f: f["max_s"]),
        ("Group level (a primary writable)", lambda f: f["group_s"]),
    ):
        points = _points(results, pick)
        if not points:
            continue
        sizes = sorted({n for n, _ in points})
        if len(sizes) < FIT_MIN_SIZES:
            counts = ", ".join(u.num(n) for n in sizes)
            out.append(
                f"{level}: measured at {counts} databases; a shape against the database count needs "
                f"{FIT_MIN_SIZES} counts or more."
            )
            continue
        fit = fit_size(points)
        if fit is None:
            continue
        grows = {"rising": "grows", "falling": "falls", "flat": "stays flat"}[fit.trend]
        shape = (
            f"time ≈ {fit.params['c']:.3g}·N^{fit.params['k']:.2f}"
            if fit.model == "power"
            else f"time ≈ {fit.params['a']:.3g} + {fit.params['b']:.3g}·N"
        )
        doubling = (
            f"; doubling the databases multiplies it by {2 ** fit.params['k']:.2f}"
            if fit.model == "power"
            else ""
        )
        against = ", ".join(u.num(n) for n in fit.against_trend)
        flag = f" Against the trend at {against} databases." if against else ""
        out.append(
            f"{level}: recovery time {grows} with the number of databases N — {fit.model} fit {shape} "
            f"(R² {fit.r2:.2f}, the other shape {fit.other_r2:.2f}){doubling}.{flag}"
        )
    return out


REPLICATION = (
    ("wal_mb_s", "log written", "MB/s"),
    ("send_lag_mb", "send lag", "MB"),
    ("write_lag_ms", "write lag", "ms"),
    ("flush_lag_ms", "flush lag", "ms"),
    ("replay_lag_ms", "replay lag", "ms"),
    ("replay_mb_s", "redo", "MB/s"),
)
"""The PostgreSQL collector's replication figures (collect/postgres.py), in a commit's order."""


def replication_table(results: Results) -> Table | None:
    """Per configuration and PostgreSQL node: the log it wrote, how far its standby was behind at
    each step of a commit (sent, written, flushed, replayed) and its own redo rate — the seed's
    log send and redo columns, beside the recovery they shape in a failover study, or beside the
    capacity of a mirrored pair (hl7's synchronous against asynchronous mirroring)."""
    rows = []
    for c in results["cells"]:
        for scope, m in sorted(c["resources"].items()):
            if not scope.startswith("pg:") or not any(k in m for k, _, _ in REPLICATION):
                continue
            primary = m.get("primary")
            rows.append(
                [
                    *_cell_cells(results, c),
                    text_cell(scope.removeprefix("pg:")),
                    num_cell(primary, u.pct(primary)),
                    *(num_cell(m.get(k), u.num(m.get(k))) for k, _, _ in REPLICATION),
                ]
            )
    if not rows:
        return None
    columns = [
        *_cell_columns(results),
        Column("node"),
        Column("primary", True, "of the time"),
        *(Column(name, True, unit) for _, name, unit in REPLICATION),
    ]
    note = (
        "Means over the measured trials, per node (the roles change hands in a failover). Lags are "
        "PostgreSQL's own (pg_stat_replication), on the primary for the standby it feeds: written and "
        "sent, then received and written, flushed to the standby's disk (what a synchronous commit "
        "waits for) and replayed (visible there); PostgreSQL clears the times once the standby has been "
        "caught up for a while. Redo: the log the node replayed as a standby."
    )
    return drop_empty_columns(Table(columns, rows, caption="Replication", note=note))


PHASE_COLUMNS: tuple[tuple[Callable[[FailoverPhases], float | None], str], ...] = (
    (lambda p: p["detected_s"], "detected"),
    (lambda p: p["elected_s"], "elected"),
    (lambda p: p["promoted_s"], "promoted"),
    (lambda p: p["writable_s"], "writable"),
    (lambda p: p["first_commit_s"], "first commit"),
    (lambda p: p["last_commit_s"], "last database"),
    (lambda p: p["load_back_s"], "load back"),
)
"""A failover's phases in the order they happen: the HA manager's, then the clients'."""


def phases_table(results: Results) -> Table | None:
    """One row per failover whose action reported its HA manager's phases: each phase in seconds
    after the fault, the manager's and the clients' on one clock, and the reconnect between them."""
    rows = []
    resolutions: set[tuple[float, float]] = set()
    for c in results["cells"]:
        for f in c["failover"]:
            p = f.get("phases")
            if not p:
                continue
            resolutions.add((p["resolution_s"], p["series_resolution_s"]))
            writable, first = p["writable_s"], p["first_commit_s"]
            reconnect = first - writable if writable is not None and first is not None else None
            rows.append(
                [
                    *_cell_cells(results, c),
                    num_cell(f["trial"] + 1, str(f["trial"] + 1)),
                    text_cell(f["action"]),
                    *(_seconds(pick(p)) for pick, _ in PHASE_COLUMNS),
                    _seconds(reconnect),
                ]
            )
    if not rows:
        return None
    columns = [
        *_cell_columns(results),
        Column("trial", True),
        Column("action"),
        *(Column(name, True, "s") for _, name in PHASE_COLUMNS),
        Column("reconnect", True, "s"),
    ]
    manager = max(r for r, _ in resolutions)
    series = max(s for _, s in resolutions)
    note = (
        "Seconds after the fault (the action's SIGKILL, on the trial's clock). Detected, elected, "
        "promoted and writable are the HA manager's own record (its consensus store's leader key, its "
        f"REST API; ± {manager:g} s, the watch's poll), put on the trial's clock by the action's start "
        "read on both clocks. First commit (the first database a client committed on again), last "
        f"database and load back (throughput back to its level before) are the clients' (± {series:g} s, "
        "the interval series). Reconnect: from writable to the clients' first commit; it reads below 0 "
        "by up to the series' resolution (a commit's interval begins before the commit), and a commit "
        "earlier than that before writable would mean the two readings disagree."
    )
    return Table(columns, rows, caption="Failover phases", note=note)


STEP_ENDING = {
    "detected": "detection",
    "elected": "election",
    "promoted": "promotion",
    "writable": "taking writes",
    "first_commit": "reconnect",
}
"""The step (analysis/phases.py STEPS) that each phase ends."""


def steps_table(results: Results) -> Table | None:
    """Per action over its trials: each phase's end after the fault and the length of the step it
    ends (p50/p95/max), the step's median share of the recovery to the clients' first commit, and
    what sets it."""
    summary = results.get("failover")
    rows = []
    for a in summary["actions"] if summary else []:
        steps = {s["name"]: s for s in a.get("steps") or []}
        for p in a.get("phases") or []:
            step = steps.get(STEP_ENDING.get(p["name"], ""))
            rows.append(
                [
                    text_cell(a["action"]),
                    text_cell(PHASE_NAMES.get(p["name"], p["name"])),
                    _seconds(p["p50_s"]),
                    _seconds(p["p95_s"]),
                    _seconds(p["max_s"]),
                    text_cell(step["name"] if step else u.DASH),
                    _seconds(step["p50_s"] if step else None),
                    _seconds(step["max_s"] if step else None),
                    num_cell(step["share"] if step else None, u.pct(step["share"] if step else None)),
                    text_cell(free((step["set_by"] if step else None) or "")),
                ]
            )
    if not rows:
        return None
    columns = [
        Column("action"),
        Column("phase"),
        Column("after the fault p50", True, "s"),
        Column("p95", True, "s"),
        Column("max", True, "s"),
        Column("step to it"),
        Column("step p50", True, "s"),
        Column("step max", True, "s"),
        Column("share", True, "of recovery"),
        Column("set by", wrap=True),
    ]
    note = (
        "Over the action's trials, nearest rank. Share: the step's part of the time from the fault to "
        "the clients' first commit (the median over the trials): the largest is the one to tune."
    )
    return Table(columns, rows, caption="Failover phases over the trials", note=note)
