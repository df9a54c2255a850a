"""`caplab ls`, `caplab show`, `caplab export`: reading the results store.

Each exits 0 done, 1 a problem the message explains (no store, no such study, database
unreachable, file not writable), 2 a bad argument. Tables go to stdout through rich, JSON to
stdout as one document, messages to stderr. URLs are printed redacted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from caplab.cli import consoles, exits
from caplab.cli.options import DB_HELP
from caplab.store.errors import StoreError
from caplab.store.export import FORMATS, export_study
from caplab.store.frames import flatten
from caplab.store.reading import EventRow
from caplab.store.repository import CellRow, Store, StudyRow, default_url
from caplab.store.urls import describe, redact_url, scrub, sqlite_path
from caplab.units import num

if TYPE_CHECKING:
    from caplab.report.model.types import FindingEntry
    from caplab.store.document import StudyDocument

_STATUS_STYLE = {
    "complete": "green",
    "running": "yellow",
    "pending": "dim",
    "interrupted": "magenta",
    "failed": "red",
}
_LAST_EVENTS = 10
_VERDICT_STYLE = {"reproduced": "green", "contradicted": "red", "inconclusive": "yellow"}


def open_store(db_url: str | None) -> Store:
    """The store to read; a missing SQLite file is an error here (reading must not create one)."""
    url = db_url or default_url()
    path = sqlite_path(url)
    if path is not None and not Path(path).exists():
        raise StoreError(
            f"no results store at {redact_url(url)} (run a study first, or give --db or CAPLAB_DB)"
        )
    return Store(url)


def guarded(work: Callable[[], int]) -> int:
    """Runs a command body, turning the problems a user can act on into a message and exit 1."""
    try:
        return work()
    except StoreError as e:
        message = str(e)
    except SQLAlchemyError as e:
        message = f"results store: {describe(e)}"
    except OSError as e:
        message = f"{e.filename or ''}: {e.strerror or e}".lstrip(": ")
    print(f"caplab: {scrub(message)}", file=sys.stderr)
    return exits.FAILED


def _status(status: str) -> str:
    return f"[{_STATUS_STYLE.get(status, '')}]{status}[/]" if status in _STATUS_STYLE else status


def _when(iso: str | None) -> str:
    """``2024-11-22T02:49:54+00:00`` → ``2024-11-22 02:49:54`` (the column says UTC)."""
    return f"{iso[:10]} {iso[11:19]}" if iso else "—"


def _json_out(data: Any) -> None:
    json.dump(data, sys.stdout)
    sys.stdout.write("\n")


# -- ls ---------------------------------------------------------------------------------------------


@click.command("ls")
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON list instead of a table.")
def ls_command(db: str | None, as_json: bool) -> None:
    """List the studies in the results store, oldest first."""
    sys.exit(cmd_ls(db, as_json))


def cmd_ls(db_url: str | None, as_json: bool) -> int:
    """Lists the studies in the store, oldest first."""

    def work() -> int:
        with open_store(db_url) as store:
            rows = store.list_studies()
            url = store.url
        if as_json:
            _json_out([asdict(r) for r in rows])
        elif not rows:
            consoles.stdout().print(f"no studies in {url}", markup=False, highlight=False)
        else:
            consoles.stdout().print(_studies_table(rows, url))
        return exits.OK

    return guarded(work)


def _studies_table(rows: list[StudyRow], url: str) -> Table:
    table = Table(caption=f"store: {url}", caption_justify="left")
    table.add_column("ID", justify="right")
    table.add_column("Name")
    table.add_column("Status")
    table.add_column("Cells", justify="right")
    table.add_column("Created (UTC)")
    table.add_column("Finished (UTC)")
    for r in rows:
        cells = f"{r.cells_complete}/{r.cells_total}"
        table.add_row(str(r.id), r.name, _status(r.status), cells, _when(r.created_at), _when(r.finished_at))
    return table


# -- show -------------------------------------------------------------------------------------------


@click.command("show")
@click.argument("study", default="latest")
@click.option("--db", help=DB_HELP)
@click.option(
    "--json", "as_json", is_flag=True, help="The whole study (cells, trials, events, findings) as JSON."
)
def show_command(study: str, db: str | None, as_json: bool) -> None:
    """Show a study: STUDY is an id, a name or `latest`. Its cells and their figures, its findings
    judged (when its file states any: reproduced, contradicted or inconclusive, and why) and its
    latest events."""
    sys.exit(cmd_show(db, study, as_json))


def cmd_show(db_url: str | None, ref: str, as_json: bool) -> int:
    """Shows one study (an id, ``latest`` or a name): its cells and figures, or the whole document."""

    def work() -> int:
        with open_store(db_url) as store:
            study_id = store.resolve_study(ref)
            if as_json:
                from caplab.analysis.scaling import study_scaling  # numpy and SciPy: only here

                stored = store.study_document(study_id)
                document = stored.to_json()
                document["scaling"] = study_scaling(document)
                document["findings"] = _findings(store, stored)
                _json_out(document)
                return exits.OK
            study = store.study(study_id)
            cells = store.cells(study_id)
            trials = store.trial_rows(study_id)
            events = store.events(study_id)
            findings = _findings(store, store.study_document(study_id))
            url = store.url
        counts: dict[int, int] = {}
        for t in trials:
            counts[t["cell_index"]] = counts.get(t["cell_index"], 0) + 1
        console = consoles.stdout()
        console.print(
            f"[bold]Study {study.id}[/] {study.name}  {_status(study.status)}  "
            f"cells {study.cells_complete}/{study.cells_total} complete",
            highlight=False,
        )
        console.print(
            f"created {_when(study.created_at)} UTC, finished {_when(study.finished_at)}  store: {url}",
            markup=False,
            highlight=False,
        )
        console.print(_cells_table(cells, counts))
        for c in cells:
            if c.error:
                console.print(f"cell {c.index}: {c.error}", style="red", markup=False, highlight=False)
        if findings:
            console.print(_findings_table(findings))
        if events:
            console.print(_events_table(events[-_LAST_EVENTS:], len(events)))
        return exits.OK

    return guarded(work)


def _cells_table(cells: list[CellRow], trial_counts: dict[int, int]) -> Table:
    factors = list(dict.fromkeys(k for c in cells for k in c.factors))
    table = Table()
    table.add_column("#", justify="right")
    for name in factors:
        table.add_column(name, justify="right")
    table.add_column("Status")
    figures = [
        ("Trials", "trials"),
        ("Throughput/s", "throughput"),
        ("p50 ms", "latency_p50_ms"),
        ("p99 ms", "latency_p99_ms"),
        ("Errors %", "error_ratio"),
    ]
    for title, _ in figures:
        table.add_column(title, justify="right")
    for c in cells:
        metrics = flatten(c.metrics or {})
        metrics["trials"] = metrics.get("trials", trial_counts.get(c.index, 0))
        if isinstance(ratio := metrics.get("error_ratio"), int | float):
            metrics["error_ratio"] = 100 * ratio
        values = [num(metrics.get(key)) for _, key in figures]
        row = [str(c.index), *[str(c.factors.get(f, "—")) for f in factors], _status(c.status), *values]
        table.add_row(*row)
    return table


def _findings(store: Store, document: StudyDocument) -> list[FindingEntry]:
    """The study's findings judged as its report judges them, when its file states any: the
    report's code (a second to import) is loaded only then."""
    if "findings" not in (document.study.spec or ""):
        return []
    from caplab.report.document import judged_findings

    return judged_findings(document, store.resource_samples(document.study.id))


def _findings_table(findings: list[FindingEntry]) -> Table:
    held = sum(f["verdict"] == "reproduced" for f in findings)
    table = Table(title=f"findings: {held} of {len(findings)} reproduced", title_justify="left")
    for name in ("Verdict", "Claim", "Why"):
        table.add_column(name)
    for f in findings:
        verdict = f["verdict"]
        table.add_row(f"[{_VERDICT_STYLE[verdict]}]{verdict}[/]", escape(f["claim"]), escape(f["reason"]))
    return table


def _events_table(events: list[EventRow], total: int) -> Table:
    shown = f"last {len(events)} of {total} events" if total > len(events) else "events"
    table = Table(title=shown, title_justify="left")
    for name in ("At (UTC)", "Cell", "Kind", "Message"):
        table.add_column(name)
    for e in events:
        cell = "" if e["cell_index"] is None else str(e["cell_index"])
        table.add_row(_when(e["at"]), cell, e["kind"], e["message"])
    return table


# -- export -----------------------------------------------------------------------------------------


@click.command("export")
@click.argument("study")
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default="csv", show_default=True
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Directory (csv, parquet) or file (json)."
)
@click.option("--db", help=DB_HELP)
def export_command(study: str, fmt: str, output: Path | None, db: str | None) -> None:
    """Export a study's cells, trials, intervals and resource samples."""
    sys.exit(cmd_export(db, study, fmt, output))


def cmd_export(db_url: str | None, ref: str, fmt: str, out_path: str | Path | None) -> int:
    """Exports one study as csv or parquet tables in a directory (default ``./study-ID``), or as
    one JSON document (default: stdout)."""
    if fmt not in FORMATS:
        print(f"caplab: --format must be one of {', '.join(FORMATS)}", file=sys.stderr)
        return exits.USAGE

    def work() -> int:
        out = Path(out_path) if out_path is not None else None
        if out is not None and fmt != "json" and out.exists() and not out.is_dir():
            raise StoreError(
                f"{out} exists and is not a directory (csv and parquet write one file per table)"
            )
        with open_store(db_url) as store:
            study_id = store.resolve_study(ref)
            written = export_study(store, study_id, fmt, out, sys.stdout)
        if written:
            where = out if fmt == "json" else written[0].parent
            names = ", ".join(p.name for p in written)
            print(
                f"exported study {study_id} to {where}" + ("" if fmt == "json" else f": {names}"),
                file=sys.stderr,
            )
        return exits.OK

    return guarded(work)
