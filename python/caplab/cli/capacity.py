"""`caplab find-capacity` and `caplab fit-usl`: options in, search or fit out, table or JSON."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from caplab.analysis.limit import Limit
from caplab.analysis.scaling import FitJudgement, judge_fit
from caplab.analysis.slo import SloError, parse_slo
from caplab.analysis.usl import UslFit, fit_usl
from caplab.cli import consoles, exits
from caplab.cli.cluster import cluster_options, plan_runner
from caplab.cli.options import DURATION, request_fields, request_options
from caplab.cli.placement import cli_placement, placement_options, pop_placement
from caplab.cli.render import fmt_ms
from caplab.cluster.errors import AgentsFailed, ClusterUnreachable
from caplab.collect import RoleSpec
from caplab.engine import LoadSpec, PlanError, TargetUnreachable, UsageProblem
from caplab.experiments.base import TrialRecord
from caplab.experiments.capacity import (
    CapacityAnswer,
    FindSettings,
    Probe,
    TrialLength,
    combine_replicates,
    find_capacity,
)
from caplab.json_types import member, number, pair
from caplab.json_types import text as json_text
from caplab.spec import SpecError
from caplab.workloads.postgres import DatabaseProblem

FIND_EPILOG = """
\b
The search: short trials double the load until the SLO fails, bisect to --precision, then
--repeats full-length trials confirm the found load (stepping down if one fails). Every trial must
also be steady (no trend through its window); an open-model search always adds
'throughput>=0.99*offered' (a backlog is a failure). A generator that saturates stops the search.
\b
Examples:
  caplab find-capacity http://127.0.0.1:8080/ --slo 'p99<=50ms' --slo 'errors<=0.1%' --sut-match server
  caplab find-capacity http://127.0.0.1:8080/ --closed --think 1s --slo 'cpu<=75%' --sut-pid 1234
\b
Exit codes: 0 capacity found, 1 not found (SLO fails at the minimum, generator saturated,
target unreachable), 2 bad arguments, 130 interrupted.
"""


@click.command("find-capacity", epilog=FIND_EPILOG)
@click.argument("url")
@click.option(
    "--slo", "slos", multiple=True, help="An SLO predicate (repeatable): p99<=50ms, errors<=0.1%, cpu<=75%…"
)
@click.option("--sut-pid", type=int, help="The SUT's process id: its CPU, memory and IO name the limit.")
@click.option("--sut-match", help="The SUT's processes by command-line substring.")
@click.option(
    "--precision", default="5%", show_default=True, help="Stop bisecting when hi/lo is within this."
)
@click.option("--closed", is_flag=True, help="Search the number of users (closed model) instead of the rate.")
@click.option("--think", "think_s", type=DURATION, default=0.0, help="Closed model: think time per user.")
@click.option("--think-dist", type=click.Choice(["constant", "exponential"]), default="constant")
@click.option(
    "--start", type=click.FloatRange(min=0, min_open=True), help="First load tried [100/s or 1 user]."
)
@click.option("--max", "maximum", type=click.FloatRange(min=0, min_open=True), help="Highest load tried.")
@click.option(
    "--trial", "trial_s", type=DURATION, default=3.0, show_default=True, help="Search trial length."
)
@click.option(
    "--confirm",
    "confirm_s",
    type=DURATION,
    default=10.0,
    show_default=True,
    help="Confirmation trial length.",
)
@click.option(
    "--repeats", type=click.IntRange(min=1, max=10), default=3, show_default=True, help="Confirmation trials."
)
@click.option(
    "--replicates",
    type=click.IntRange(min=1, max=20),
    default=1,
    show_default=True,
    help="Run the whole search this many times; the capacity's interval then comes from them.",
)
@click.option(
    "--warmup", "warmup_s", type=DURATION, default=1.0, show_default=True, help="Warm-up of each trial."
)
@request_options
@cluster_options
@placement_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def find_capacity_command(as_json: bool, **options: Any) -> None:
    """Find the highest load URL sustains within the SLO, and what limits it."""
    try:
        code = cmd_find_capacity(as_json=as_json, **options)
    except UsageProblem as e:
        raise click.UsageError(str(e)) from e
    except SpecError as e:
        click.echo(f"caplab: {e}", err=True)
        code = exits.USAGE
    except DatabaseProblem as e:
        click.echo(f"caplab: {e}", err=True)
        code = exits.FAILED
    sys.exit(code)


@click.command("fit-usl")
@click.argument("csv_file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--predict", type=float, multiple=True, help="Also predict throughput at this N (repeatable).")
def fit_usl_command(csv_file: Path, as_json: bool, predict: tuple[float, ...]) -> None:
    """Fit the Universal Scalability Law to CSV_FILE (columns n,throughput; repeated n allowed)."""
    sys.exit(cmd_fit_usl(csv_file, as_json, list(predict)))


def parse_percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%")) / 100.0
    except ValueError as e:
        raise UsageProblem(f"--precision {text!r} must be a percentage such as 5%") from e
    if not 0.001 <= value <= 0.5:
        raise UsageProblem("--precision must be between 0.1% and 50%")
    return value


def cmd_find_capacity(
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
    replicates: int,
    warmup_s: float,
    as_json: bool,
    cluster: str | None = None,
    agents: int | None = None,
    **request: Any,
) -> int:
    generator_cpus, sut_cpus = pop_placement(request)
    check_find_options(slos, sut_pid, sut_match, closed, think_s)
    roles = sut_roles(sut_pid, sut_match)
    fields = request_fields(request, url)
    base = LoadSpec(think_s=think_s, think_dist=think_dist, **({"url": url} | fields))  # type: ignore[arg-type]
    closed = closed or base.usage is not None  # a usage profile's load is its users
    settings = FindSettings(
        slos=slos,
        precision=parse_percent(precision),
        closed=closed,
        start=start or (1.0 if closed else 100.0),
        maximum=maximum or (10_000.0 if closed else 1_000_000.0),
        trial=TrialLength(trial_s, warmup_s),
        confirm=TrialLength(confirm_s, warmup_s),
        repeats=repeats,
    )
    err = consoles.stderr()
    show = trial_printer(err, closed)
    try:
        answers = []
        with (
            cli_placement(generator_cpus, sut_cpus, roles, err) as placement,
            plan_runner(cluster, agents) as runner,
        ):
            for replicate in range(replicates):
                if replicates > 1:
                    err.print(f"[bold]replicate {replicate + 1} of {replicates}[/]")
                answers.append(find_capacity(base, settings, roles, on_trial=show, runner=runner))
    except (PlanError, UsageProblem) as e:
        raise UsageProblem(str(e)) from e
    except (TargetUnreachable, ClusterUnreachable, AgentsFailed) as e:
        click.echo(f"caplab: {e}", err=True)
        return exits.FAILED
    except KeyboardInterrupt:
        click.echo("caplab: interrupted", err=True)
        return exits.INTERRUPTED
    answer, doc = replicated(answers)
    if placement is not None:
        doc["placement"] = placement.to_json()
    if as_json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_capacity(consoles.stdout(), answer)
    return exits.OK if answer.found else exits.FAILED


def check_find_options(
    slos: tuple[str, ...], sut_pid: int | None, sut_match: str | None, closed: bool, think_s: float
) -> None:
    """Options that contradict each other or do not parse are refused before any load is sent."""
    for text in slos:
        try:
            parse_slo(text)
        except SloError as e:
            raise UsageProblem(str(e)) from e
    if sut_pid is not None and sut_match is not None:
        raise UsageProblem("give --sut-pid or --sut-match, not both")
    if think_s and not closed:
        raise UsageProblem("--think applies to --closed searches (and --usage sets its own)")


def sut_roles(sut_pid: int | None, sut_match: str | None) -> list[RoleSpec]:
    """The SUT as one role when it was named, so its resources can name the limit; else none."""
    if sut_pid is None and sut_match is None:
        return []
    return [RoleSpec(name="server", pid=sut_pid, match=sut_match)]


def trial_printer(err: Console, closed: bool) -> Callable[[TrialRecord, Probe], None]:
    """One line on stderr per trial, so a long search shows where it is."""
    unit = " users" if closed else "/s"

    def show(_: TrialRecord, p: Probe) -> None:
        mark = "[green]pass[/]" if p.passed else "[red]fail[/]"
        why = f"  {escape(p.reasons[0])}" if p.reasons else ""  # cpu[server]: not rich markup
        err.print(
            f"{p.phase:8} {p.load:>10,.1f}{unit}  {mark}  {p.throughput:,.1f}/s  p99 {fmt_ms(p.p99_ms)}{why}"
        )

    return show


def replicated(answers: list[CapacityAnswer]) -> tuple[CapacityAnswer, dict[str, Any]]:
    """One search's answer as it is; several searches as one capacity with its interval from them
    (they ran against a system caplab did not start, so without restarting it between them), by
    the rule a study combines its replicates with. Returns the answer and its ``--json`` document."""
    if len(answers) == 1:
        return answers[0], answers[0].to_dict()
    combined = combine_replicates([answer.outcome() for answer in answers])
    capacity = member(combined, "capacity")
    # One of the answers' own limits, passed through unchanged: a Limit or None.
    limit = cast("Limit | None", combined.get("limit"))
    answer = replace(
        answers[-1],
        found=bool(capacity.get("found")),
        message=json_text(capacity, "message"),
        generator_saturated=bool(capacity.get("generator_saturated")),
        capacity_at_least=number(capacity, "capacity_at_least"),
        capacity_rps=number(capacity, "capacity_rps"),
        capacity_users=number(capacity, "capacity_users"),
        ci95=pair(capacity, "ci95"),
        search_s=number(capacity, "search_s"),
        limit=limit,
        trials=[p for a in answers for p in a.trials],
        replicate_count=len(answers),
    )
    return answer, {**capacity, "limit": combined["limit"], "trials": combined["search_trials"]}


INTERVAL_WORDS = {
    "search": "search bracket (one search: how precisely it placed the capacity, no confidence interval)",
    "replicates": "95% interval from {n} replicates (the system was not restarted between them)",
}


def print_capacity(console: Console, answer: CapacityAnswer) -> None:
    ci, rps, users = answer.ci95, answer.capacity_rps, answer.capacity_users
    if not answer.found or rps is None:
        console.print(f"[bold red]no capacity:[/] {answer.message}")
        return
    head = f"{users:,.1f} users ({rps:,.1f}/s)" if users is not None else f"{rps:,.1f}/s"
    unit = " users" if users is not None else "/s"
    words = INTERVAL_WORDS.get(answer.interval or "", "").format(n=answer.replicate_count)
    if ci is not None:
        head += f"; {words}: {ci[0]:,.1f}–{ci[1]:,.1f}{unit}"
    console.print(f"[bold]capacity[/] {head}")
    slo = escape(", ".join(answer.slo))
    console.print(f"SLO: {slo}; {len(answer.trials)} trials in {answer.search_s or 0:.0f}s")
    print_actions(console, answer)
    limit = answer.limit
    console.print(f"[bold]limit[/] {limit['summary'] if limit else 'not analysed'}")
    demands = limit["evidence"].get("demands", []) if limit else []
    if demands:
        t = Table("resource", "utilization", "demand/request", "bound", "note", header_style="bold")
        for d in demands:
            bound = f"{d['bound_rps']:,.0f}/s" if d["bound_rps"] else "–"
            t.add_row(d["resource"], f"{d['utilization']:.0%}", f"{d['demand_ms']:.3f} ms", bound, d["note"])
        console.print(t)


def print_actions(console: Console, answer: CapacityAnswer) -> None:
    """A usage profile's figures at capacity: actions per user offered and reached, and each
    action's rate, errors and latency over the confirmation trials."""
    u = answer.per_user
    if u is not None:
        console.print(
            f"[bold]per user[/] {u.offered * 3600:,.1f} actions/h offered ({u.offered:.4g}/s), "
            f"{u.achieved * 3600:,.1f}/h reached",
            highlight=False,
        )
    if len(answer.actions) < 2 and u is None:
        return
    t = Table("action", "per s", "errors", "p50", "p90", "p95", "p99", header_style="bold")
    for a in answer.actions:
        latencies = (a.p50_ms, a.p90_ms, a.p95_ms, a.p99_ms)
        t.add_row(a.name, f"{a.per_s:,.2f}", str(a.errors), *(fmt_ms(v) for v in latencies))
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


def cmd_fit_usl(path: Path, as_json: bool, predict: list[float]) -> int:
    try:
        n, x = read_points(path)
        fit = fit_usl(n, x, extrapolate_to=max(predict) if predict else None)
    except UsageProblem as e:
        click.echo(f"caplab: {e}", err=True)
        return exits.USAGE
    except ValueError as e:
        click.echo(f"caplab: {path}: {e}", err=True)
        return exits.USAGE
    judged = judge_fit(n, x, fit)
    if as_json:
        json.dump(fit_document(fit, judged, n, x, predict), sys.stdout)
        sys.stdout.write("\n")
    elif judged.usable:
        print_fit(consoles.stdout(), fit)
    else:
        print_no_model(consoles.stdout(), fit, judged, n, x)
    return exits.OK


def fit_document(
    fit: UslFit, judged: FitJudgement, n: list[float], x: list[float], predict: list[float]
) -> dict[str, Any]:
    """The `--json` object. A fit that does not fit is no model: ``model`` is null, nothing is
    predicted, and the rejected candidate is kept under ``candidate`` for whoever wants to see it."""
    points = [{"n": a, "throughput": b} for a, b in zip(n, x, strict=True)]
    peak = {"n": judged.peak_n, "throughput": judged.peak_throughput}
    if judged.usable:
        doc = fit.to_dict()
        doc["requested"] = [{"n": p, "throughput": fit.predict(p)} for p in predict]
        return {**doc, "fits": True, "reason": None, "measured": points, "peak": peak}
    candidate = {k: v for k, v in fit.to_dict().items() if k != "predictions"}
    return {
        "model": None,
        "fits": False,
        "reason": judged.reason,
        "measured": points,
        "peak": peak,
        "candidate": candidate,
        "predictions": [],
        "requested": [],
    }


def print_no_model(
    console: Console, fit: UslFit, judged: FitJudgement, n: list[float], x: list[float]
) -> None:
    console.print(f"[bold]no model fits[/]: {judged.reason}")
    t = Table("N", "throughput", header_style="bold")
    for a, b in zip(n, x, strict=True):
        t.add_row(f"{a:g}", f"{b:,.1f}")
    console.print(t)
    console.print(
        f"measured peak: {judged.peak_throughput:,.1f}/s at N = {judged.peak_n:g}; nothing is extrapolated"
    )
    holdout = f", held-out error {fit.holdout_error:+.1%}" if fit.holdout_error is not None else ""
    console.print(f"(the best candidate, {fit.model}, has R² {fit.r2:.2f}{holdout})", highlight=False)


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
