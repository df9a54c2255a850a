"""`caplab compare A B`: two stored studies cell by cell — each capacity's ratio with its
interval, the limit (same or changed) and a verdict — as a table, JSON, or a CI gate
(``--fail-if-slower 5%``)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click
from rich.table import Table

from caplab.analysis.compare import CellComparison, Change, Figure, compare_runs, compare_within_runs
from caplab.cli import consoles, exits
from caplab.cli.options import DB_HELP

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
    from caplab.report.document import load_results
    from caplab.store import Store, StoreError, default_url, redact_url
    from caplab.units import scrub

    urls = [db or default_url(), candidate_db or db or default_url()]
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
    runs = [_figures(r) for r in studies]
    latency = [_latencies(r) for r in studies]
    machines = [machine(r) for r in studies]
    reference: str | None = None
    if machines[0] == machines[1]:
        cells, only = compare_runs(runs[0], runs[1])
    else:
        cells, only, reference = compare_within_runs(runs[0], runs[1])
    if as_json:
        click.echo(
            json.dumps(
                {
                    "baseline": ids[0],
                    "candidate": ids[1],
                    "stores": [redact_url(u) for u in urls],
                    "machines": {"baseline": machines[0], "candidate": machines[1]},
                    "basis": "absolute" if machines[0] == machines[1] else "within-study",
                    "reference": reference,
                    "cells": [_as_json(c) for c in cells],
                    "latency_ms": {
                        k: {"baseline": latency[0][k], "candidate": latency[1][k]}
                        for k in runs[0]
                        if k in runs[1] and k in latency[0] and k in latency[1]
                    },
                    "unmatched": only,
                },
                indent=2,
            )
        )
    else:
        if machines[0] != machines[1]:
            click.echo(_machines_note(machines, ids, reference))
        consoles.stdout().print(_table(cells, ids))
        matched = [k for k in runs[0] if k in runs[1] and k in latency[0] and k in latency[1]]
        if matched:
            consoles.stdout().print(_latency_table(matched, latency, ids))
        for key in only:
            click.echo(f"only in one study: {key}")
    if threshold is not None and any(c.slower_than(threshold) for c in cells):
        click.echo(
            f"caplab: slower by more than {threshold:.0%} in: "
            + ", ".join(c.key for c in cells if c.slower_than(threshold)),
            err=True,
        )
        sys.exit(exits.SLO_FAILED)
    sys.exit(exits.OK)


def machine(results: Results) -> str:
    """The machine a study recorded, as far as it decides its figures: host, CPU model, cores and
    memory (whole GB)."""
    env = results["environment"]
    memory = env.get("memory_gb")
    gb = f"{memory:.0f} GB" if isinstance(memory, int | float) else "? GB"
    return (
        f"{env.get('hostname') or '?'}: {env.get('cpu_model') or '?'}, {env.get('cores') or '?'} cores, {gb}"
    )


def _machines_note(machines: list[str], ids: list[int], reference: str | None) -> str:
    basis = (
        f"each cell is compared by its figure over {reference}'s in the same study"
        if reference is not None
        else "no cell both studies measured can be the reference, so nothing is compared"
    )
    return (
        f"studies on different machines — #{ids[0]} on {machines[0]}, #{ids[1]} on {machines[1]}: "
        f"their absolute figures mix the configurations with the machines; {basis}"
    )


def _figures(results: Results) -> dict[str, Figure]:
    """Each rated configuration's figure, keyed by its factors."""
    out: dict[str, Figure] = {}
    for e in results["capacity"]:
        low, high = e["ci95"]
        key = ", ".join(f"{k}={v}" for k, v in sorted(e["factors"].items())) or "(the one cell)"
        out[key] = Figure(e["value"], low, high, e["unit"], e["limit"])
    return out


LATENCY_POINTS = ("p50", "p90", "p99", "p999", "max")
"""The points of each cell's latency distribution shown side by side."""


def _latencies(results: Results) -> dict[str, dict[str, float | None]]:
    """Each configuration's latency distribution, keyed as ``_figures``: the percentiles of its
    measured trials' histograms merged (the cell's own figures in results.json), not an average of
    per-trial percentiles; with the count of requests they rest on."""
    out: dict[str, dict[str, float | None]] = {}
    for c in results["cells"]:
        found = c["metrics"].get("latency_ms")
        if not isinstance(found, dict):
            continue
        key = ", ".join(f"{k}={v}" for k, v in sorted(c["factors"].items())) or "(the one cell)"
        out[key] = {
            p: v if isinstance(v := found.get(p), int | float) else None for p in (*LATENCY_POINTS, "count")
        }
    return out


def _latency_table(
    keys: list[str], latency: list[dict[str, dict[str, float | None]]], ids: list[int]
) -> Table:
    table = Table(
        title=f"latency (ms) of each cell's measured trials, histograms merged: #{ids[0]} → #{ids[1]}",
        title_justify="left",
    )
    for name in ("Cell", *LATENCY_POINTS, "requests"):
        table.add_column(name)
    for key in keys:
        a, b = latency[0][key], latency[1][key]
        table.add_row(key, *(f"{_ms(a[p])} → {_ms(b[p])}" for p in (*LATENCY_POINTS, "count")))
    return table


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _as_json(c: CellComparison) -> dict[str, object]:
    return {
        "cell": c.key,
        "baseline": c.a.__dict__,
        "candidate": c.b.__dict__,
        "ratio": c.ratio,
        "interval": [c.low, c.high] if c.low is not None else None,
        "change": c.change.value,
        "limit_changed": c.limit_changed,
    }


def _table(cells: list[CellComparison], ids: list[int]) -> Table:
    table = Table(
        title=f"study {ids[1]} against study {ids[0]} (ratio = {ids[1]} / {ids[0]})", title_justify="left"
    )
    for name in ("Cell", f"#{ids[0]}", f"#{ids[1]}", "Ratio [95 %]", "Verdict", "Limit"):
        table.add_column(name)
    for c in cells:
        ratio = (
            "–"
            if c.ratio is None
            else f"{c.ratio:.2f}"
            + (f" [{c.low:.2f}, {c.high:.2f}]" if c.low is not None and c.high is not None else "")
        )
        style = {Change.FASTER: "green", Change.SLOWER: "red"}.get(c.change, "")
        table.add_row(
            c.key,
            _shown(c.a),
            _shown(c.b),
            ratio,
            f"[{style}]{c.change.value}[/]" if style else c.change.value,
            c.limit_changed or (c.a.limit or ""),
        )
    return table


def _shown(f: Figure) -> str:
    if f.value is None:
        return "not found"
    interval = f" [{f.low:.4g}, {f.high:.4g}]" if f.low is not None and f.high is not None else ""
    return f"{f.value:.4g}{interval} {f.unit}"
