"""`caplab find-capacity` and `caplab fit-usl`: options in, search or fit out, table or JSON."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from caplab.analysis.capacity import Probe
from caplab.analysis.find import FindSettings, find_capacity
from caplab.analysis.probe import TrialShape
from caplab.analysis.slo import SloError, parse_slo
from caplab.analysis.usl import UslFit, fit_usl
from caplab.collect import RoleSpec
from caplab.engine import PlanError, TargetUnreachable
from caplab.load import LoadOptions, UsageProblem
from caplab.render import fmt_ms

EXIT_NOT_FOUND = 1
EXIT_INTERRUPTED = 130


def parse_percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%")) / 100.0
    except ValueError as e:
        raise UsageProblem(f"--precision {text!r} must be a percentage such as 5%") from e
    if not 0.001 <= value <= 0.5:
        raise UsageProblem("--precision must be between 0.1% and 50%")
    return value


def find_capacity_command(
    url: str,
    slos: tuple[str, ...],
    sut_pid: int | None,
    sut_match: str | None,
    precision: str,
    closed: bool,
    think_s: float,
    think_dist: str,
    start: float | None,
    maximum: float | None,
    trial_s: float,
    confirm_s: float,
    repeats: int,
    warmup_s: float,
    as_json: bool,
    **request: Any,
) -> int:
    for text in slos:
        try:
            parse_slo(text)
        except SloError as e:
            raise UsageProblem(str(e)) from e
    if sut_pid is not None and sut_match is not None:
        raise UsageProblem("give --sut-pid or --sut-match, not both")
    roles = []
    if sut_pid is not None or sut_match is not None:
        roles.append(RoleSpec(name="server", pid=sut_pid, match=sut_match))
    if think_s and not closed:
        raise UsageProblem("--think applies to --closed searches")
    base = LoadOptions(url=url, think_s=think_s, think_dist=think_dist, **request)  # type: ignore[arg-type]
    settings = FindSettings(
        slos=slos,
        precision=parse_percent(precision),
        closed=closed,
        start=start or (1.0 if closed else 100.0),
        maximum=maximum or (10_000.0 if closed else 1_000_000.0),
        trial=TrialShape(trial_s, warmup_s),
        confirm=TrialShape(confirm_s, warmup_s),
        repeats=repeats,
    )
    err = Console(stderr=True)

    def show(p: Probe) -> None:
        mark = "[green]pass[/]" if p.passed else "[red]fail[/]"
        unit = " users" if closed else "/s"
        why = f"  {p.reasons[0]}" if p.reasons else ""
        err.print(
            f"{p.phase:8} {p.load:>10,.1f}{unit}  {mark}  {p.throughput:,.1f}/s  p99 {fmt_ms(p.p99_ms)}{why}"
        )

    try:
        doc = find_capacity(base, settings, roles, on_verdict=show)
    except (PlanError, UsageProblem) as e:
        raise UsageProblem(str(e)) from e
    except TargetUnreachable as e:
        click.echo(f"caplab: {e}", err=True)
        return EXIT_NOT_FOUND
    except KeyboardInterrupt:
        click.echo("caplab: interrupted", err=True)
        return EXIT_INTERRUPTED
    if as_json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_capacity(Console(), doc)
    return 0 if doc["found"] else EXIT_NOT_FOUND


def print_capacity(console: Console, doc: dict[str, Any]) -> None:
    if not doc["found"]:
        console.print(f"[bold red]no capacity:[/] {doc['message']}")
        return
    ci = doc["ci95"]
    if doc["capacity_users"] is not None:
        users, rps = doc["capacity_users"], doc["capacity_rps"]
        head = f"{users} users ({rps:,.1f}/s); 95% interval {ci[0]:g}–{ci[1]:g} users"
    else:
        head = f"{doc['capacity_rps']:,.1f}/s; 95% interval {ci[0]:,.1f}–{ci[1]:,.1f}/s"
    console.print(f"[bold]capacity[/] {head}")
    console.print(f"SLO: {', '.join(doc['slo'])}; {doc['trial_count']} trials in {doc['search_s']:.0f}s")
    limit = doc.get("limit") or {}
    console.print(f"[bold]limit[/] {limit.get('summary', 'not analysed')}")
    demands = (limit.get("evidence") or {}).get("demands") or []
    if demands:
        t = Table("resource", "utilization", "demand/request", "bound", "note", header_style="bold")
        for d in demands:
            bound = f"{d['bound_rps']:,.0f}/s" if d["bound_rps"] else "–"
            t.add_row(d["resource"], f"{d['utilization']:.0%}", f"{d['demand_ms']:.3f} ms", bound, d["note"])
        console.print(t)


def read_points(path: Path) -> tuple[list[float], list[float]]:
    """Reads n,throughput rows; a header row is optional."""
    n: list[float] = []
    x: list[float] = []
    with path.open(newline="") as f:
        for i, row in enumerate(csv.reader(f), start=1):
            if not row or row[0].strip().startswith("#"):
                continue
            try:
                a, b = float(row[0]), float(row[1])
            except (ValueError, IndexError) as e:
                if i == 1:
                    continue  # the header
                raise UsageProblem(f"{path}:{i}: expected two numbers n,throughput, got {row!r}") from e
            if not (math.isfinite(a) and math.isfinite(b)):
                raise UsageProblem(f"{path}:{i}: n and throughput must be finite numbers, got {row!r}")
            n.append(a)
            x.append(b)
    return n, x


def fit_usl_command(path: Path, as_json: bool, predict: list[float]) -> int:
    try:
        n, x = read_points(path)
        fit = fit_usl(n, x, extrapolate_to=max(predict) if predict else None)
    except UsageProblem as e:
        click.echo(f"caplab: {e}", err=True)
        return 2
    except ValueError as e:
        click.echo(f"caplab: {path}: {e}", err=True)
        return 2
    doc = fit.to_dict()
    doc["requested"] = [{"n": p, "throughput": fit.predict(p)} for p in predict]
    if as_json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_fit(Console(), fit)
    return 0


def print_fit(console: Console, fit: UslFit) -> None:
    console.print(f"[bold]{fit.model}[/] fits best (AICc); R² {fit.r2:.4f} over {fit.points} points")
    t = Table("parameter", "value", "95% interval", header_style="bold")
    for name, value in (("lambda", fit.lam), ("sigma", fit.sigma), ("kappa", fit.kappa)):
        lo, hi = fit.ci[name]
        t.add_row(name, f"{value:.6g}", f"{lo:.6g} – {hi:.6g}")
    console.print(t)
    if fit.peak_n is not None:
        console.print(f"peak at N = {fit.peak_n:.1f}: {fit.peak_throughput:,.1f}/s")
    if fit.holdout_error is not None:
        console.print(f"held-out error (fit without the largest N, predict it): {fit.holdout_error:+.1%}")
