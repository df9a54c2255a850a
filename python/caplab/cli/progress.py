"""What a running study shows: which cell and trial, the live rate and p99, each role's CPU; and
the summary table at the end. Progress goes to stderr so `--json` output stays clean."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from rich import box
from rich.console import Console
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from caplab.cli import consoles
from caplab.cli.render import fmt_ms
from caplab.collect.base import ResourceSample
from caplab.collect.summary import summarize
from caplab.engine import IntervalSnapshot, Plan, RunResult
from caplab.json_types import JsonObject, member, number
from caplab.json_types import text as json_text
from caplab.spec import Cell, Study
from caplab.store import CellRow
from caplab.store.urls import scrub
from caplab.units import factors_text, varying_factors


class StudyProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or consoles.stderr()
        self.live: Live | None = None
        self.total = 0
        self.position = 0
        self.header = ""
        self.trial = ""
        self.headers: dict[int, str] = {}
        """Each begun cell's header, by index: an interleaved study returns to a cell."""

    def study_started(self, study_id: int, study: Study, rows: list[CellRow]) -> None:
        self.total = len(rows)
        done = sum(r.status == "complete" for r in rows)
        resumed = f", {done} already complete" if done else ""
        self.console.print(f"[bold]study {study_id}[/] {study.name}: {self.total} cells{resumed}")

    def note(self, text: str) -> None:
        """A line about the study as a whole (a baseline being measured, a report written)."""
        self.console.print(text, highlight=False)

    def cell_skipped(self, cell: Cell) -> None:
        self.position += 1
        self.console.print(
            f"cell {self.position}/{self.total} {factors_text(cell.factors)}: complete, skipped"
        )

    def cell_started(self, cell: Cell) -> None:
        self.position += 1
        self.header = f"cell {self.position}/{self.total} {factors_text(cell.factors)}"
        self.headers[cell.index] = self.header
        if self.console.is_terminal and self.live is None:
            self.live = Live(console=self.console, transient=True, auto_refresh=False)
            self.live.start()
        self._show(Text(f"{self.header}: starting"))

    def replicate_started(self, cell: Cell, line: str) -> None:
        """A line that stays (the order of the study's runs, in a log); the cell's header again."""
        self.header = self.headers.get(cell.index, self.header)
        self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None:
        self.trial = f"trial {index + 1}/{repeat} at {plan.load_words()}"
        self._show(Text(f"{self.header} {self.trial}"))

    def trial_finished(self, kind: str, result: RunResult, samples: list[ResourceSample]) -> None:
        """One line per trial that stays on screen and in a log: what load, what it carried,
        its p99 and errors, and each role's CPU over the measured window."""
        load = f"{result.users:,} users" if result.users else f"{result.offered_rate or 0:,.0f}/s offered"
        window = (result.warmup_s, result.warmup_s + result.duration_s)
        cpu = summarize((x for x in samples if x.metric == "cpu_percent"), *window)
        roles = " ".join(
            f"{scope.removeprefix('role:')} {use['cpu_percent']:.0f}%"
            for scope, use in sorted(cpu.items(), key=lambda kv: kv[0] == "host")
            if scope.startswith("role:") or scope == "host"
        )
        line = Text(f"{self.header} {kind} at {load}: {result.throughput:,.1f}/s, p99 ")
        line.append(fmt_ms(result.latency_ms.p99 or result.latency_ms.max))
        line.append(f", errors {result.errors:,}")
        if roles:
            line.append(f", cpu (of a host core) {roles}")
        self.console.print(line, soft_wrap=True)  # one line per trial, for a log to grep

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None:
        roles = " ".join(
            f"{x.scope.removeprefix('role:')} {x.value:.0f}%"
            for x in samples
            if x.metric == "cpu_percent" and (x.scope.startswith("role:") or x.scope == "host")
        )
        phase = "warm-up " if s.warmup else ""
        line = (
            f"{self.header} {self.trial}  {phase}{s.end_s:5.1f}s  {s.throughput:,.0f}/s  "
            f"p99 {fmt_ms(s.latency_ms.p99 or s.latency_ms.max)}  errors {s.errors}  cpu {roles}"
        )
        self._show(Text(line))

    def cell_finished(
        self,
        cell: Cell,
        status: str,
        metrics: JsonObject,
        resources: JsonObject,
        reason: str | None = None,
    ) -> None:
        if status == "complete" and _no_capacity(metrics):
            line = Text(f"{self.header}: ")
            line.append("no capacity found", style="yellow")
            line.append(f": {json_text(member(metrics, 'capacity'), 'message') or ''}")
            self.console.print(line)
        elif status == "complete" and "job" in metrics:
            self.console.print(f"{self.header}: [green]complete[/] {job_note(dict(member(metrics, 'job')))}")
        elif status == "complete":
            p99 = number(member(metrics, "latency_ms"), "p99")
            note = f"{number(metrics, 'throughput') or 0:,.1f}/s, p99 {fmt_ms(p99)}"
            self.console.print(f"{self.header}: [green]complete[/] {note}")
        else:
            # The reason is the SUT's own output: printed as text, never read as markup.
            line = Text(f"{self.header}: ")
            line.append(status, style="red")
            line.append(f" {scrub(reason or '')}")
            self.console.print(line)

    def _show(self, text: Text) -> None:
        if self.live is not None:
            self.live.update(text, refresh=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def summary_table(document: dict[str, Any], console: Console | None = None) -> Table:
    """One row per cell: the factors that vary (those that do not go in the title), status,
    throughput, p99, errors, the limit and the CPU of each role (100 = one core). On a console too
    narrow for every role, the roles go and the machine's CPU stays; the report has every figure."""
    table = _summary_table(document, with_roles=True)
    natural = Measurement.get(console, console.options.update_width(10_000), table) if console else None
    if console is not None and natural is not None and natural.maximum > console.width:
        table = _summary_table(document, with_roles=False)
    return table


def _summary_table(document: dict[str, Any], *, with_roles: bool) -> Table:
    cells = document["cells"]
    factor_names = list(cells[0]["factors"]) if cells else []
    varied = varying_factors(cells)
    fixed = " ".join(f"{f}={cells[0]['factors'][f]}" for f in factor_names if f not in varied)
    title = f"study {document['study']['id']}: {document['study']['name']}" + (f" ({fixed})" if fixed else "")
    statuses = [_status(c) for c in cells]
    columns = _SummaryColumns(
        varied=varied,
        status=not all(status == "complete" for status in statuses),
        phases=list(
            dict.fromkeys(
                p for c in cells for p in ((c.get("metrics") or {}).get("job") or {}).get("phases", {})
            )
        ),
        errors=any((c.get("metrics") or {}).get("errors") for c in cells),
        roles=_cpu_roles(cells) if with_roles else [],
    )
    table = Table(
        title=scrub(title),
        caption=_summary_caption(cells, columns, with_roles) or None,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=0,
        pad_edge=False,
    )
    for name in columns.headers():
        table.add_column(name, justify="left" if name == "limit" else "right", no_wrap=True)
    for role in [*columns.roles, "host"]:
        table.add_column(f"cpu %\n{role}", justify="right", no_wrap=True)
    for c, status in zip(cells, statuses, strict=True):
        table.add_row(*columns.row(c, status))
    return table


def _cpu_roles(cells: list[dict[str, Any]]) -> list[str]:
    """The roles whose CPU some cell measured, each a column of its own."""
    return sorted(
        {
            r
            for c in cells
            for r, use in (c.get("resources") or {}).items()
            if r not in ("host", "generator") and isinstance(use, dict) and "cpu_percent" in use
        }
    )


def _summary_caption(cells: list[dict[str, Any]], columns: _SummaryColumns, with_roles: bool) -> str:
    """What holds for every cell, so the rows need not say it."""
    failed = sum(c["status"] == "failed" for c in cells)
    # A failed cell measured nothing, or only part: "no errors" would claim more than was measured.
    return "; ".join(
        (
            [f"{failed} of {len(cells)} cells failed (see `caplab show`)"]
            if failed
            else ([] if columns.errors else ["no errors in any cell"])
        )
        + ([] if columns.status else ["every cell complete"])
        + ([] if with_roles else ["CPU per role: in the report"])
        + (
            ["a role on a profile: cpu % of its profile's quota"]
            if _on_profiles(cells, columns.roles)
            else []
        )
    )


@dataclass(frozen=True)
class _SummaryColumns:
    """The summary's columns: the factors that vary, the status unless every cell is complete, a
    job's items/s per phase (else req/s and p99), errors when any cell had some, the limit, and
    the CPU of each role and of the host."""

    varied: list[str]
    status: bool
    phases: list[str]
    errors: bool
    roles: list[str]

    def headers(self) -> list[str]:
        """Every column's header but the CPU ones."""
        return [
            *self.varied,
            *(["status"] if self.status else []),
            *([f"{p}\nitems/s" for p in self.phases] if self.phases else ["req/s", "p99"]),
            *(["errors"] if self.errors else []),
            "limit",
        ]

    def row(self, cell: dict[str, Any], status: str) -> list[str]:
        m = cell.get("metrics") or {}
        res = cell.get("resources") or {}
        row = [str(cell["factors"][f]) for f in self.varied]
        if self.status:
            style = {"complete": "green", "failed": "red"}.get(status, "yellow")
            row.append(f"[{style}]{status}[/]")
        if self.phases:
            figures = (m.get("job") or {}).get("phases", {})
            row += [_items_rate(figures.get(p) or {}) for p in self.phases]
        else:
            row.append(f"{m['throughput']:,.0f}" if "throughput" in m else "–")
            row.append(fmt_ms((m.get("latency_ms") or {}).get("p99")))
        if self.errors:
            row.append(str(m.get("errors", "–")))
        row.append((m.get("limit") or _phase_limit(m) or {}).get("resource", "–"))
        for role in [*self.roles, "host"]:
            cpu = _cpu_share(res.get(role) or {})
            row.append(f"{cpu:.0f}" if cpu is not None else "–")
        return row


def _items_rate(phase: dict[str, Any]) -> str:
    rate = phase.get("items_per_s")
    return f"{rate:,.1f}" if rate is not None else "–"


def _phase_limit(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """A job's limit: the first phase's that names one."""
    phases = ((metrics.get("job") or {}).get("phases") or {}).values()
    return next((p["limit"] for p in phases if p.get("limit")), None)


def job_note(job: dict[str, Any]) -> str:
    """``stage 199.4 items/s [199.3, 199.6], sync 49.7 items/s``: each phase's rate."""
    parts = []
    for name, phase in job.get("phases", {}).items():
        rate = phase.get("items_per_s")
        shown = f"{rate:,.1f} items/s" if rate is not None else f"{phase.get('wall_s') or 0:.2f}s"
        ci = phase.get("ci95")
        parts.append(f"{name} {shown}" + (f" [{ci[0]:,.1f}, {ci[1]:,.1f}]" if ci else ""))
    return ", ".join(parts)


def _cpu_share(figures: dict[str, Any]) -> float | None:
    """A role's CPU %: of its profile's quota when it has one (100 = the profile's cores all busy,
    whatever the scale), else of one host core."""
    cpu, quota = figures.get("cpu_percent"), figures.get("quota_cpus")
    if cpu is None or not quota:
        return cast(float | None, cpu)
    return float(cpu) / float(quota)


def _on_profiles(cells: list[dict[str, Any]], roles: list[str]) -> bool:
    return any(((c.get("resources") or {}).get(r) or {}).get("quota_cpus") for c in cells for r in roles)


def _no_capacity(metrics: JsonObject) -> bool:
    """A searched cell whose search ended without a capacity (it completed, but has no figure)."""
    search = member(metrics, "capacity")
    return bool(search) and not search.get("found")


def _status(cell: dict[str, Any]) -> str:
    """The cell's status, except that a complete cell whose search found no capacity says so."""
    if cell["status"] == "complete" and _no_capacity(cell.get("metrics") or {}):
        return "no capacity"
    return str(cell["status"])


def replicates_line(document: dict[str, Any]) -> str | None:
    """What the searched cells' intervals are: from replicates, a confidence interval; from one
    search (``replicates: 1``), only that search's bracket — said, so nobody reads it as more."""
    searched = [
        c["metrics"]["capacity"]
        for c in document["cells"]
        if isinstance((c.get("metrics") or {}).get("capacity"), dict)
        and c["metrics"]["capacity"].get("found")
    ]
    if not searched:
        return None
    counts = sorted({int(s.get("replicate_count") or 1) for s in searched})
    if counts == [1]:
        return (
            "capacities from 1 replicate: each interval is that search's bracket, not a confidence "
            "interval (`replicates: 3` measures how much runs vary)"
        )
    over = " or ".join(str(n) for n in counts)
    return f"capacities: the mean of {over} replicates each (fresh SUT start each), 95% t-interval over them"


def scaling_line(entry: dict[str, Any]) -> str:
    group = " ".join(f"{k}={v}" for k, v in entry["group"].items())
    where = f" ({group})" if group else ""
    fit = entry.get("fit")
    if not fit:
        # No law fits (analysis/scaling.py decides): the measured peak, and nothing extrapolated.
        measured = entry.get("peak")
        peak = (
            f"; measured peak {measured['throughput']:,.0f}/s at {entry['factor']}={measured['n']:g}, "
            "nothing extrapolated"
            if measured and entry.get("candidate")
            else ""
        )
        return f"scaling over {entry['factor']}{where}: {entry.get('note', 'no fit')}{peak}"
    peak = f", peak N {fit['peak_n']:.1f}" if fit.get("peak_n") else ""
    return (
        f"scaling over {entry['factor']}{where}: {fit['model']} λ={fit['lambda']:.4g} σ={fit['sigma']:.3g} "
        f"κ={fit['kappa']:.3g}, R² {fit['r2']:.3f}{peak}"
    )
