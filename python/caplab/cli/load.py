"""`caplab load`: one trial from command-line options, with live progress and a summary or JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.live import Live

from caplab import engine
from caplab.analysis.gate import gate_slos, judge_load
from caplab.analysis.slo import Slo, SloError, Verdict, as_dict
from caplab.cli import consoles, exits, render
from caplab.cli.cluster import cluster_options
from caplab.cli.options import DURATION, parse_steps, request_fields, request_options
from caplab.cli.placement import cli_placement, placement_options, pop_placement
from caplab.cli.publish import IntervalPublisher
from caplab.cli.web import start_live, web_option
from caplab.engine import DEFAULT_INTERVAL_S, LoadSpec, OpenLoad, Plan, PlanError, TargetUnreachable
from caplab.experiments.actions import TrialActions, recoveries, recovery_text
from caplab.experiments.alongside import run_alongside
from caplab.spec.errors import SpecError
from caplab.units import parse_duration
from caplab.workloads.postgres import DatabaseProblem

if TYPE_CHECKING:
    from caplab.live import LiveServer
    from caplab.spec import ActionSpec

LOAD_EPILOG = """
\b
Models:
  open   --rate R [--schedule poisson] [--ramp-to R2] | --steps 100:5s,200:5s
         requests leave on schedule whatever the replies do; latency is timed from the
         intended send time (coordinated omission corrected); when --connections requests
         are already outstanding a send is counted as dropped, never delayed.
  closed --users N [--think 100ms --think-dist exponential] [--logon 60s --warmup 60s]
         N users each send, wait for the reply, think, repeat (like wrk -c N); with
         --logon, their first requests (the sessions they keep) fall within the warm-up.
  usage  --users N --usage profile.yaml
         N users each doing the profile's actions at their rates per user-hour (or
         per_day): think time exponential with mean 3600 s / (the rates' sum), the
         actions mixed in proportion to their rates, statistics per action. The think
         time is taken as a user's whole cycle: right while replies are short against it.
\b
Examples:
  caplab load http://127.0.0.1:8080/ --rate 2000 --duration 30s --warmup 5s
  caplab load http://127.0.0.1:8080/ --users 50 --duration 10s --json
  caplab load http://127.0.0.1:8080/orders -m POST -H 'Content-Type: text/xml' \\
      --body '<order id="{seq}"/>' --template --rate 500
  caplab load tcp://127.0.0.1:2575 --framing mllp --body-file adt.hl7 --rate 100
  caplab load https://127.0.0.1:8443/ --insecure --users 50 -H 'Connection: close'
  caplab load postgresql://bench@127.0.0.1:5432/db --workload tpcb --users 16 -d 30s
  caplab load smtps://127.0.0.1:465 --insecure --password-file DIR/passwords --mailboxes 100 \\
      --message-size 50K --users 20
  caplab load imap://127.0.0.1:143 --insecure --password-file DIR/passwords --mailboxes 100 --users 20
  caplab load http://127.0.0.1:8080/ --users 500 --usage mail-users.yaml -d 60s
\b
A usage profile (mail-users.yaml; per_day: 48 is per_hour: 2):
  actions:
    send: {per_hour: 6, method: POST, path: /send, body_file: message.eml}
    read: {per_hour: 30, path: /inbox}
\b
A fault during the trial, and how the load came through it (outage, failed requests,
time until it settled, rate after), read from the interval series:
  caplab load http://127.0.0.1:8080/ --rate 500 --duration 30s --interval 100ms \\
      --action '10s:systemctl restart app'
\b
On load agents of a Ray cluster (the load split among them, results merged):
  caplab load http://10.0.0.5:8080/ --rate 20000 --cluster ray://10.0.0.2:10001 --agents 4
\b
As a CI gate: each --slo judged on the measured window, the verdicts in a JUnit file:
  caplab load http://127.0.0.1:8080/ --rate 500 -d 30s --slo 'p99<=50ms' --slo 'errors<=0.1%' \\
      --junit build/load.xml
\b
Watched in a browser as it runs (throughput, latency and errors per interval), on a free port:
  caplab load http://127.0.0.1:8080/ --rate 500 -d 60s --web=0
\b
Exit codes: 0 done, 1 target or cluster unreachable, a TLS certificate that fails verification
(or an agent died), 2 bad arguments, 3 an --slo failed (or the generator fell behind),
130 interrupted (results kept).
"""


@click.command("load", epilog=LOAD_EPILOG)
@click.argument("url")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Open model: requests per second.")
@click.option(
    "--ramp-to", type=click.FloatRange(min=0), help="Open model: ramp linearly from --rate to this."
)
@click.option("--steps", help="Open model: a staircase RATE:DURATION,… (e.g. 100:5s,200:5s).")
@click.option(
    "--schedule",
    type=click.Choice(["constant", "poisson"]),
    default="constant",
    show_default=True,
    help="Open model: inter-arrival times.",
)
@click.option("--users", type=click.IntRange(min=1), help="Closed model: concurrent users.")
@click.option("--think", "think_s", type=DURATION, default=0.0, help="Closed model: think time per user.")
@click.option(
    "--think-dist", type=click.Choice(["constant", "exponential"]), default="constant", show_default=True
)
@click.option(
    "-d",
    "--duration",
    "duration_s",
    type=DURATION,
    default=10.0,
    show_default=True,
    help="Measured window (after warm-up).",
)
@click.option("--warmup", "warmup_s", type=DURATION, default=0.0, help="Load before measuring; excluded.")
@click.option(
    "--logon",
    "logon_s",
    type=DURATION,
    default=0.0,
    help="Closed model: spread the users' first requests evenly over this long (within --warmup), "
    "so sessions they keep are open before measuring.",
)
@request_options
@click.option(
    "-n", "--max-requests", type=click.IntRange(min=1), help="Stop after this many measured requests."
)
@click.option(
    "--interval",
    "interval_s",
    type=DURATION,
    default=DEFAULT_INTERVAL_S,
    show_default=True,
    help="Snapshot interval.",
)
@click.option("--seed", type=int, default=0, help="Seed for Poisson arrivals.")
@click.option(
    "--action",
    "actions",
    multiple=True,
    metavar="AT:COMMAND",
    help="Run COMMAND (a shell command) AT this long after the load starts, and measure the load's "
    "recovery from it. Repeatable.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve each interval's figures in Prometheus format on 127.0.0.1:PORT/metrics while running.",
)
@click.option(
    "--slo",
    "slo_texts",
    multiple=True,
    metavar="PREDICATE",
    help="A gate on the measured window: p99<=50ms, errors<=0.1%, throughput>=0.99*offered. "
    "Any failed (or a generator that fell behind) exits 3. Repeatable.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write each --slo verdict (and the generator's) to FILE as a JUnit test case, for CI.",
)
@web_option
@cluster_options
@placement_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def load_command(
    as_json: bool,
    steps: str | None,
    actions: tuple[str, ...],
    metrics_port: int | None,
    web_port: int | None,
    slo_texts: tuple[str, ...],
    junit_path: Path | None,
    cluster: str | None,
    agents: int | None,
    **options: Any,
) -> None:
    """Drive load at URL (http://, https://, tcp://, tls://, postgresql://, smtp://, smtps://, imap:// or
    imaps://) and measure it: one trial."""
    gate = _gate(slo_texts, junit_path, cluster is not None or agents is not None)
    generator_cpus, sut_cpus = pop_placement(options)
    try:
        fields = request_fields(options, options["url"])
        spec = LoadSpec(steps=parse_steps(steps) if steps else None, **fields)
        plan = engine.build_plan(spec)
    except engine.UsageProblem as e:
        raise click.UsageError(str(e)) from e
    except SpecError as e:
        click.echo(f"caplab: {e}", err=True)
        sys.exit(exits.USAGE)
    except DatabaseProblem as e:
        click.echo(f"caplab: {e}", err=True)
        sys.exit(exits.FAILED)
    scheduled = [parse_action(a, spec.warmup_s + (spec.duration_s or 0.0)) for a in actions]
    if cluster is not None or agents is not None:
        if web_port is not None:
            raise click.UsageError("--web shows a load run on this machine: not with --cluster yet")
        sys.exit(load_on_cluster(plan, as_json, cluster, agents, scheduled, metrics_port))
    try:
        # The server's own CPUs (--sut-cpus) are kept free of the generator; start it there yourself.
        with cli_placement(generator_cpus, sut_cpus, [], consoles.stderr()):
            code = cmd_load(
                plan, as_json, actions=scheduled, metrics_port=metrics_port, gate=gate, web_port=web_port
            )
    except (PlanError, engine.UsageProblem) as e:
        raise click.UsageError(str(e)) from e
    except TargetUnreachable as e:
        click.echo(f"caplab: {e}", err=True)
        sys.exit(exits.FAILED)
    sys.exit(code)


def load_on_cluster(
    plan: Plan,
    as_json: bool,
    address: str | None,
    agents: int | None,
    actions: list[ActionSpec],
    metrics_port: int | None,
) -> int:
    """`--cluster`/`--agents`: the load split across load agents on Ray (see cli/cluster.py)."""
    from caplab.cli.cluster import AGENTS_NEED_CLUSTER, DEFAULT_AGENTS, cmd_load_on_cluster
    from caplab.cluster.split import split_plan

    if address is None:
        raise click.UsageError(AGENTS_NEED_CLUSTER)
    if actions:
        raise click.UsageError("--action runs on this machine: not with --cluster")
    count = agents if agents is not None else DEFAULT_AGENTS
    try:
        split_plan(plan, count)
    except engine.UsageProblem as e:
        raise click.UsageError(str(e)) from e
    publisher = start_publisher(metrics_port)
    try:
        return cmd_load_on_cluster(plan, as_json, address, count, publisher=publisher)
    finally:
        if publisher is not None:
            publisher.stop()


def result_json(url: str, r: engine.RunResult) -> dict[str, Any]:
    """The `--json` object: the engine's result plus the target it was measured against."""
    return {"target": url, **r.raw}


def parse_action(text: str, ends_s: float) -> ActionSpec:
    """``10s:COMMAND`` → an action at 10 s; its time must fall within the load."""
    at, sep, command = text.partition(":")
    if not sep or not command.strip():
        raise click.BadParameter(
            f"{text!r}: expected AT:COMMAND, e.g. '10s:kill -9 1234'", param_hint="--action"
        )
    try:
        seconds = parse_duration(at)
    except ValueError as e:
        raise click.BadParameter(f"{text!r}: {e}", param_hint="--action") from e
    if ends_s and seconds >= ends_s:
        raise click.BadParameter(
            f"{text!r}: {at} is after the load ends ({ends_s:g}s)", param_hint="--action"
        )
    from caplab.spec import ActionSpec  # the study file's models: only for a run with actions

    shown = command.strip()
    return ActionSpec(at=seconds, run=shown, name=shown if len(shown) <= 40 else shown[:39] + "…")


@dataclass(frozen=True)
class Gate:
    """`--slo` and `--junit`: the predicates the measured window is held to, and where the verdicts
    go for a CI system."""

    slos: list[Slo]
    junit: Path | None


def _gate(texts: tuple[str, ...], junit: Path | None, on_cluster: bool) -> Gate | None:
    if not texts:
        if junit is not None:
            raise click.UsageError("--junit writes the --slo verdicts: give at least one --slo")
        return None
    if on_cluster:
        raise click.UsageError("--slo judges a load on this machine: not with --cluster yet")
    try:
        return Gate(gate_slos(list(texts)), junit)
    except SloError as e:
        raise click.BadParameter(str(e), param_hint="--slo") from e


def cmd_load(
    plan: Plan,
    as_json: bool,
    console: Console | None = None,
    actions: list[ActionSpec] | None = None,
    metrics_port: int | None = None,
    gate: Gate | None = None,
    web_port: int | None = None,
) -> int:
    """Runs the plan, showing progress on a terminal (and on the live page with ``web_port``);
    returns the process exit code."""
    err = console or consoles.stderr()
    timed = TrialActions(actions, {}, Path.cwd()) if actions else None
    publisher = start_publisher(metrics_port)
    try:
        live = start_live(web_port)
    except click.UsageError:
        if publisher is not None:
            publisher.stop()
        raise
    try:
        return _run_load(plan, as_json, err, timed, Watchers(publisher, live), gate)
    finally:
        if publisher is not None:
            publisher.stop()
        if live is not None:
            live.stop()


def start_publisher(port: int | None) -> IntervalPublisher | None:
    """The live Prometheus endpoint, or a usage error when its port cannot be had."""
    if port is None:
        return None
    publisher = IntervalPublisher(port)
    try:
        publisher.start()
    except OSError as e:
        raise click.UsageError(f"--metrics-port {port}: {e.strerror or e}") from e
    return publisher


@dataclass(frozen=True)
class Watchers:
    """Who else is told each interval of the load: the Prometheus endpoint, the live page."""

    publisher: IntervalPublisher | None
    page: LiveServer | None

    def started(self, plan: Plan) -> None:
        if self.page is not None:
            from caplab.live import load_started

            load_started(self.page, plan.target.url, plan)

    def interval(self, s: engine.IntervalSnapshot, offered: float | None) -> None:
        if self.publisher is not None:
            self.publisher.update(s, offered)
        if self.page is not None:
            self.page.apply(lambda state: state.interval(s, []))

    def finished(self, result: engine.RunResult) -> None:
        if self.page is not None:
            from caplab.live import load_finished

            load_finished(self.page, result)


def _run_load(
    plan: Plan,
    as_json: bool,
    err: Console,
    timed: TrialActions | None,
    watchers: Watchers,
    gate: Gate | None,
) -> int:
    offered = plan.load.profile[0].rate_start if isinstance(plan.load, OpenLoad) else None
    live_enabled = not as_json and err.is_terminal
    watchers.started(plan)
    with Live(console=err, transient=True, auto_refresh=False) as live:

        def on_interval(s: engine.IntervalSnapshot) -> None:
            if timed is not None:
                timed.observe(s)  # conditions, and the load's clock the actions are timed on
            watchers.interval(s, offered)
            if live_enabled:
                live.update(render.live_line(s, offered), refresh=True)

        if timed is not None:
            timed.start()
        try:
            result = run_alongside(plan, on_interval, engine.run)
        except BaseException:
            if timed is not None:
                timed.stop(finish_running=False)
            raise
        outcomes = timed.stop(finish_running=not result.interrupted) if timed is not None else []
    watchers.finished(result)
    recovered = recoveries(result, outcomes)
    verdicts = judge_load(gate.slos, result) if gate is not None else []
    if as_json:
        extra = ({"actions": recovered} if outcomes else {}) | (
            {"slo": [as_dict(v) for v in verdicts]} if gate is not None else {}
        )
        json.dump(result_json(plan.target.url, result) | extra, sys.stdout)
        sys.stdout.write("\n")
    else:
        render.summary(consoles.stdout(), plan.target.url, result)
    for outcome, entry in zip(outcomes, recovered, strict=True):
        err.print(recovery_text(outcome, entry), markup=False, highlight=False)
    if result.interrupted:
        return exits.INTERRUPTED
    return _report_gate(gate, verdicts, err, result.duration_s) if gate is not None else exits.OK


def _report_gate(gate: Gate, verdicts: list[Verdict], err: Console, seconds: float) -> int:
    """Prints each verdict, writes the JUnit file, and gives the gate's exit code."""
    for v in verdicts:
        err.print(f"{'pass' if v.passed else 'FAIL'}  {v.reason}", markup=False, highlight=False)
    if gate.junit is not None:
        # here, not at the top: the report package brings SciPy and pandas, seconds of CPU at
        # every `caplab load` start (the generator's own cost in bench/RESULTS.md) for a flag
        from caplab.report.junit import GateCase, write_junit

        cases = [GateCase("load", v.slo, v.passed, v.reason, seconds) for v in verdicts]
        err.print(f"JUnit: {write_junit(gate.junit, 'caplab load', cases)}", markup=False, highlight=False)
    return exits.OK if all(v.passed for v in verdicts) else exits.SLO_FAILED
