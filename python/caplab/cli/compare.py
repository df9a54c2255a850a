"""`caplab compare A B`: two stored studies cell by cell — each capacity's ratio with its
interval, the limit (same or changed) and a verdict — as a table, JSON, or a CI gate
(``--fail-if-slower 5%``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from caplab.analysis.compare import Change
from caplab.cli import consoles, exits
from caplab.cli.options import DB_HELP
from caplab.report.comparison import LATENCY_POINTS, StudyComparison, ms, ratio_text, shown

if TYPE_CHECKING:
    from caplab.report.model.types import Results


def _fraction(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise click.BadParameter(f"{text!r}: a share such as 5% or 0.05") from None
    if not 0 < value < 1:
        raise click.BadParameter(f"{text!r}: between 0 and 100 %")
    return value


@click.command("compare")
@click.argument("baseline")
@click.argument("candidate")
@click.option("--db", help=DB_HELP)
@click.option(
    "--candidate-db",
    help="CANDIDATE's store when it is not --db's: SQLite against PostgreSQL, another machine's file.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every cell's comparison.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write the comparison as DIR/index.html (and DIR/compare.json).",
)
@click.option(
    "--fail-if-slower",
    "fail_if_slower",
    metavar="SHARE",
    help="Exit 3 when a cell's capacity fell by more than SHARE (5%) with its interval excluding it.",
)
def compare_command(
    baseline: str,
    candidate: str,
    db: str | None,
    candidate_db: str | None,
    as_json: bool,
    output: Path | None,
    fail_if_slower: str | None,
) -> None:
    """Compare two stored studies cell by cell: BASELINE and CANDIDATE are ids, names or `latest`.

    \b
    For each configuration both ran: the capacity's ratio CANDIDATE / BASELINE with its
    interval, faster or slower only when the interval excludes 1 (else indistinguishable),
    and the limit, same or changed.
      caplab compare 12 latest
      caplab compare baseline-run latest --fail-if-slower 5%      a CI gate
    Then each cell's latency distribution side by side (p50 … max of its measured trials).
      caplab compare 3 3 --db sqlite:///old.db --candidate-db postgresql://…/caplab
    \b
    Studies recorded on different machines are compared by each cell's figure over a reference
    cell both ran (how the configurations stand to one another), not by absolute figures.
    \b
    Exit codes: 0 compared, 1 a study not found, 2 bad arguments, 3 slower beyond --fail-if-slower.
    """
    threshold = _fraction(fail_if_slower) if fail_if_slower is not None else None
    from caplab.report.comparison import compare_studies
    from caplab.report.document import load_results
    from caplab.store import Store, StoreError, default_url, redact_url
    from caplab.units import scrub

    urls = (db or default_url(), candidate_db or db or default_url())
    try:
        studies: list[Results] = []
        ids: list[int] = []
        for url, ref in zip(urls, (baseline, candidate), strict=True):
            with Store(url) as store:
                ids.append(store.resolve_study(ref))
                studies.append(load_results(store, ids[-1]))
    except (StoreError, LookupError) as e:
        click.echo(f"caplab: {scrub(str(e))}", err=True)
        sys.exit(exits.FAILED)
    stores = redact_url(urls[0]), redact_url(urls[1])
    compared = compare_studies(studies[0], studies[1], (ids[0], ids[1]), stores)
    if as_json:
        click.echo(json.dumps(compared.to_json(), indent=2))
    else:
        if (note := compared.machines_note()) is not None:
            click.echo(note)
        consoles.stdout().print(_table(compared))
        if compared.latency:
            consoles.stdout().print(_latency_table(compared))
        for key in compared.unmatched:
            click.echo(f"only in one study: {key}")
    if output is not None:
        _write_page(compared, output)
    if threshold is not None and (slower := compared.slower(threshold)):
        click.echo(f"caplab: slower by more than {threshold:.0%} in: " + ", ".join(slower), err=True)
        sys.exit(exits.SLO_FAILED)
    sys.exit(exits.OK)


def _write_page(compared: StudyComparison, directory: Path) -> None:
    """``-o DIR``: the comparison as DIR/index.html and DIR/compare.json."""
    from datetime import UTC, datetime

    from caplab.report.comparison import comparison_report
    from caplab.report.render.html import render_html

    try:
        directory.mkdir(parents=True, exist_ok=True)
        generated = datetime.now(UTC).isoformat(timespec="seconds")
        page = directory / "index.html"
        page.write_text(render_html(comparison_report(compared, generated), generated), encoding="utf-8")
        (directory / "compare.json").write_text(
            json.dumps(compared.to_json(), indent=2) + "\n", encoding="utf-8"
        )
    except OSError as e:
        click.echo(f"caplab: {directory}: {e.strerror or e}", err=True)
        sys.exit(exits.FAILED)
    click.echo(f"wrote {page}", err=True)


def _table(c: StudyComparison) -> Table:
    a, b = c.ids
    table = Table(title=f"study {b} against study {a} (ratio = {b} / {a})", title_justify="left")
    for name in ("Cell", f"#{a}", f"#{b}", "Ratio [95 %]", "Verdict", "Limit"):
        table.add_column(name)
    for x in c.cells:
        style = {Change.FASTER: "green", Change.SLOWER: "red"}.get(x.change, "")
        table.add_row(
            x.key,
            shown(x.a),
            shown(x.b),
            ratio_text(x),
            f"[{style}]{x.change.value}[/]" if style else x.change.value,
            x.limit_changed or (x.a.limit or ""),
        )
    return table


def _latency_table(c: StudyComparison) -> Table:
    a, b = c.ids
    table = Table(
        title=f"latency (ms) of each cell's measured trials, histograms merged: #{a} → #{b}",
        title_justify="left",
    )
    for name in ("Cell", *LATENCY_POINTS, "requests"):
        table.add_column(name)
    for key, (x, y) in c.latency.items():
        table.add_row(key, *(f"{ms(x[p])} → {ms(y[p])}" for p in (*LATENCY_POINTS, "count")))
    return table
