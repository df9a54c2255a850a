"""`caplab failover`: one failover measured under load from the command line — a load at a target
(a PostgreSQL pair from `caplab systems start pgpair`, or any URL `caplab load` drives), a command
run during it at a time or when a condition holds (a switchover, a killed primary), and what the
clients saw: the outage, the time to recover, the errors by kind, the throughput before and after,
per database, the replication lag around it and, with a ledger, the acknowledged transactions lost.

It is the study's failover trial (experiments/actions.py, experiments/failover.py) without a study
file: the same actions, the same per-database series, ledger (lost counted database by database)
and verdict, the same figures. The one trial is trial 0 in what it stores, as a cell's first is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from rich.console import Console
from rich.live import Live

from caplab import engine
from caplab.analysis.recovery import Interval, Recovery
from caplab.analysis.trigger import TriggerError, trigger_for
from caplab.cli import consoles, exits, render
from caplab.cli.options import DURATION, request_fields, request_options
from caplab.collect import CollectorSet, PostgresCollector, ResourceSample, summarize
from caplab.engine import LoadSpec, OpenLoad, PlanError, TargetUnreachable, is_postgres
from caplab.experiments.actions import ActionOutcome, TrialActions, recoveries
from caplab.experiments.base import TrialRecord, run_trial
from caplab.experiments.failover import (
    database_series,
    failover_line,
    judged_failover,
    ledger_entry,
    ledger_line,
    load_back,
)
from caplab.spec import ActionSpec, RecoverySpec
from caplab.study.sut import sut_environment
from caplab.workloads.postgres import DatabaseProblem, ledger_rows, prepare, shown_url

LAGS = ("send_lag_mb", "write_lag_ms", "flush_lag_ms", "replay_lag_ms")
"""The replication figures shown at their peak: how far behind the standby was when it mattered."""

FAILOVER_EPILOG = """
\b
The action is a shell command (run in this directory with this caplab's python first on PATH, in
its own process group, killed at --action-timeout), fired once: --at a time after the load starts
(warm-up included), --when a condition first holds on an interval (p99 > 50ms, errors > 1%,
throughput < 500/s, or a collector's figure: replay_lag_ms > 100, flush_lag_ms[pg:HOST:PORT] > 5),
or --after steady.
Recovery is read from the interval series, so --interval is its resolution.
\b
Examples (a pair started with `caplab systems start pgpair --data-dir pg --databases 1 --port 7600`):
  export PGPASSFILE=$PWD/pg/pgpass
  caplab failover 'postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/ag_0?target_session_attrs=read-write' \\
      --users 8 -d 20s --action 'python -m caplab.systems.pgpair switchover --data-dir pg' --at 5s
  caplab failover 'postgresql://…' --rate 500 --ledger --within 5s \\
      --action 'python -m caplab.systems.pgpair kill-primary --data-dir pg' --when 'p99 > 20ms'
\b
Exit codes: 0 done (and recovered within --within), 1 the target unreachable, the action failed
or never ran, or the recovery missed --within, 2 bad arguments, 130 interrupted (results kept).
"""


@click.command("failover", epilog=FAILOVER_EPILOG)
@click.argument("url")
@click.option("--action", "command", required=True, help="The shell command to run during the load.")
@click.option("--at", "at_s", type=DURATION, help="Run it this long after the load starts.")
@click.option("--when", "condition", help="Run it when this condition first holds on an interval.")
@click.option("--after", type=click.Choice(["steady"]), help="Run it once the load is steady.")
@click.option("--name", help="What to call the action [default: its command].")
@click.option(
    "--action-timeout", type=DURATION, default=120.0, show_default=True, help="Kill the action after this."
)
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Open model: requests per second.")
@click.option("--users", type=click.IntRange(min=1), help="Closed model: concurrent users [default: 8].")
@click.option("--think", "think_s", type=DURATION, default=0.0, help="Closed model: think time per user.")
@click.option(
    "-d", "--duration", "duration_s", type=DURATION, default=20.0, show_default=True, help="Measured window."
)
@click.option("--warmup", "warmup_s", type=DURATION, default=0.0, help="Load before measuring.")
@click.option(
    "--interval",
    "interval_s",
    type=DURATION,
    default=0.2,
    show_default=True,
    help="Interval series resolution: recovery times are good to ± one interval.",
)
@request_options
@click.option(
    "--node",
    "nodes",
    multiple=True,
    metavar="URL",
    help="A PostgreSQL node to sample (WAL, replication lag) [default: each host of a postgresql:// URL].",
)
@click.option(
    "--ledger",
    is_flag=True,
    help="postgresql://: each transaction also writes a ledger row, counted after the run on the "
    "primary: acknowledged transactions lost, measured.",
)
@click.option(
    "--within", "within_s", type=DURATION, help="The recovery SLO: every database back within this."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def failover_command(
    url: str,
    command: str,
    at_s: float | None,
    condition: str | None,
    after: str | None,
    name: str | None,
    action_timeout: float,
    nodes: tuple[str, ...],
    ledger: bool,
    within_s: float | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Run a failover under load at URL and measure what the clients saw of it."""
    action = action_spec(command, at_s, condition, after, name, action_timeout)
    if ledger and not is_postgres(url):
        raise click.UsageError("--ledger applies to postgresql:// targets")
    if options["rate"] is None and options["users"] is None:
        options["users"] = 8
    workload, sql_file = options.get("workload"), options.get("sql_file")
    try:
        fields = request_fields(options | {"url": url}, url)
        if ledger:
            fields["body"] = prepare(url, workload, sql_file, ledger=True).script
            ledger_rows(url, wait_s=0, empty=True)  # a ledger of this run alone
        spec = LoadSpec(**fields)
        plan = engine.build_plan(spec)
    except engine.UsageProblem as e:
        raise click.UsageError(str(e)) from e
    except DatabaseProblem as e:
        click.echo(f"caplab: {e}", err=True)
        sys.exit(exits.FAILED)
    end = spec.warmup_s + spec.duration_s
    if action.at is not None and action.at >= end:
        raise click.BadParameter(f"{action.at:g}s is after the load ends ({end:g}s)", param_hint="--at")
    samplers = [PostgresCollector(list(nodes) or node_urls(url))] if is_postgres(url) else []
    recovery_slo = RecoverySpec(within=within_s, lossless=False) if within_s is not None else None
    try:
        code = cmd_failover(plan, url, action, CollectorSet(samplers), ledger, recovery_slo, as_json)
    except PlanError as e:
        raise click.UsageError(str(e)) from e
    except TargetUnreachable as e:
        click.echo(f"caplab: {e}", err=True)
        code = exits.FAILED
    sys.exit(code)


def action_spec(
    command: str,
    at_s: float | None,
    condition: str | None,
    after: str | None,
    name: str | None,
    timeout: float,
) -> ActionSpec:
    """The one action of the run, its trigger checked here: usage errors (exit 2) name the option."""
    if sum(x is not None for x in (at_s, condition, after)) != 1:
        raise click.UsageError("say when to run the action: --at TIME, --when CONDITION or --after steady")
    if not command.strip():
        raise click.BadParameter("an empty command", param_hint="--action")
    try:
        trigger_for(condition, after)
    except TriggerError as e:
        raise click.BadParameter(str(e), param_hint="--when") from e
    shown = name or (command.strip() if len(command.strip()) <= 40 else command.strip()[:39] + "…")
    return ActionSpec(
        at=at_s,
        when=condition,
        after="steady" if after else None,
        run=command.strip(),
        name=shown,
        timeout=timeout,
    )


def node_urls(url: str) -> list[str]:
    """One connection string per host of a (multi-host) libpq URL, same user, database and
    password source, no ``target_session_attrs``: each node sampled whatever its role."""
    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if k != "target_session_attrs"}
    hosts = params.pop("host", "localhost").split(",")
    ports = params.pop("port", "5432").split(",")
    ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)
    return [make_conninfo("", host=h, port=p, **params) for h, p in zip(hosts, ports, strict=True)]


def cmd_failover(
    plan: engine.Plan,
    url: str,
    action: ActionSpec,
    samplers: CollectorSet,
    ledger: bool,
    recovery_slo: RecoverySpec | None,
    as_json: bool,
    console: Console | None = None,
) -> int:
    """Runs the load with its action, then reports the failover; returns the exit code."""
    err = console or consoles.stderr()
    timed = TrialActions([action], {}, Path.cwd(), sut_environment())  # `python -m caplab…` is this one
    offered = plan.load.profile[0].rate_start if isinstance(plan.load, OpenLoad) else None
    with Live(console=err, transient=True, auto_refresh=False) as live:

        def progress(s: engine.IntervalSnapshot, samples: list[ResourceSample]) -> None:
            if not as_json and err.is_terminal:
                live.update(render.live_line(s, offered), refresh=True)

        try:
            record = run_trial(plan, samplers, timed.watching(progress), timed.start)
        except BaseException:
            timed.stop(finish_running=False)
            raise
        [outcome] = timed.stop(finish_running=not record.result.interrupted)
    report = failover_report(record, url, outcome, ledger, recovery_slo)
    if as_json:
        json.dump({"target": shown_url(url), **record.result.raw, "failover": report}, sys.stdout)
        sys.stdout.write("\n")
    else:
        render.summary(consoles.stdout(), shown_url(url), record.result)
        for line in failover_lines(report, outcome):
            consoles.stdout().print(line, markup=False, highlight=False)
    if record.result.interrupted:
        return exits.INTERRUPTED
    verdict = (report.get("databases") or {}).get("verdict")
    return exits.OK if outcome.ok and (verdict is None or verdict["success"]) else exits.FAILED


def failover_report(
    record: TrialRecord, url: str, outcome: ActionOutcome, ledger: bool, recovery_slo: RecoverySpec | None
) -> dict[str, Any]:
    """``{"action", "load", "errors", "databases", "replication", "ledger"}``: the action as it ran,
    the load's recovery (analysis/recovery.py), the errors by kind with the first words of each,
    each database's recovery judged against ``recovery_slo`` (analysis/failover.py), the peak and
    mean replication figures per node and, with a ledger, the acknowledged transactions lost."""
    result = record.result
    [entry] = recoveries(result, [outcome])
    report: dict[str, Any] = entry | {
        "errors": {"by_kind": result.errors_by_kind, "first_words": result.error_samples}
    }
    if not is_postgres(url):
        return report
    series = database_series(result, url)
    counted = ledger_counted(url, series) if ledger and not result.interrupted else None
    if counted is not None:
        report["ledger"] = counted
    judged = judged_failover(recovery_slo, series, [outcome], counted, 0, load_back([entry]))
    if judged is not None:
        report["databases"] = judged
    report["replication"] = replication(record.samples)
    return report


def ledger_counted(url: str, series: dict[str, list[Interval]]) -> dict[str, Any]:
    """The study's ledger entry for the one trial (experiments/failover.py), or what was
    acknowledged and why the ledger could not be read."""
    try:
        return ledger_entry([url], None, series, 0)
    except DatabaseProblem as e:
        acknowledged = sum(i.completed for s in series.values() for i in s)
        return {"acknowledged": acknowledged, "error": str(e)}


def replication(samples: list[ResourceSample]) -> dict[str, dict[str, Any]]:
    """Per PostgreSQL node: whether and how long it was primary, WAL and redo rates (means), and
    the lags at their peak and mean over the run."""
    means = summarize(samples)
    out: dict[str, dict[str, Any]] = {}
    for scope, m in sorted(means.items()):
        if not scope.startswith("pg:"):
            continue
        node: dict[str, Any] = {k: m[k] for k in ("primary", "wal_mb_s", "replay_mb_s") if k in m}
        for lag in LAGS:
            seen = [s.value for s in samples if s.scope == scope and s.metric == lag]
            if seen:
                node[lag] = {"max": max(seen), "mean": m[lag]}
        out[scope.removeprefix("pg:")] = node
    return out


def failover_lines(report: dict[str, Any], outcome: ActionOutcome) -> list[str]:
    """The failover, as text after the load's summary."""
    lines = [f"action: {outcome.describe()}"]
    load = report.get("load")
    if load is not None:
        r = Recovery(**load)
        back = (
            "no disruption seen"
            if not r.disrupted
            else f"recovered after {r.recovery_s:.2f} s"
            if r.recovery_s is not None
            else "not recovered by the end of the load"
        )
        lines.append(
            f"outage: {r.unavailable_s:.2f} s with no completion; {back} (± {r.resolution_s:g} s); "
            f"{r.failed:,} requests failed meanwhile"
        )
        before = f"{r.before_rps:,.0f}/s" if r.before_rps is not None else "–"
        after = f"{r.after_rps:,.0f}/s" if r.after_rps is not None else "–"
        ratio = f" ({r.after_ratio:.0%} of before)" if r.after_ratio is not None else ""
        lines.append(f"throughput: before {before}, after {after}{ratio}")
    kinds = report["errors"]["by_kind"]
    if kinds:
        lines.append("errors by kind: " + ", ".join(f"{k} {n:,}" for k, n in sorted(kinds.items())))
        lines += [f"  {k}: {words}" for k, words in sorted(report["errors"]["first_words"].items())]
    if "databases" in report:
        lines.append(f"databases: {failover_line(report['databases'])}")
    for node, m in (report.get("replication") or {}).items():
        role = f"primary {m['primary']:.0%} of the time" if "primary" in m else "role unknown"
        lags = ", ".join(
            f"{lag.removesuffix('_ms').removesuffix('_mb').replace('_', ' ')} {m[lag]['max']:.3g} "
            f"{'ms' if lag.endswith('_ms') else 'MB'}"
            for lag in LAGS
            if lag in m
        )
        rates = ", ".join(
            f"{k.removesuffix('_mb_s')} {m[k]:.2f} MB/s" for k in ("wal_mb_s", "replay_mb_s") if k in m
        )
        lines.append(
            f"replication {node}: {role}; " + "; ".join(x for x in (rates, lags and f"peak {lags}") if x)
        )
    if "ledger" in report:
        led = report["ledger"]
        lines.append(
            ledger_line(led)
            if "held" in led
            else f"ledger: {led['acknowledged']:,} transactions acknowledged, {led['error']}"
        )
    return lines
