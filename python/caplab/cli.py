"""The command layer: options and messages only; the work lives in the modules it calls."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from caplab import __version__
from caplab.engine import PlanError, TargetUnreachable
from caplab.load import LoadOptions, UsageProblem, build_plan, run_load
from caplab.units import parse_duration


class Duration(click.ParamType[float, Any]):
    """A click type for ``500ms``, ``30s``, ``2m``; the value is seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


DURATION = Duration()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="caplab")
def main() -> None:
    """caplab turns load tests into capacity plans.

    \b
    Drive load at a system and measure it correctly:
      caplab load http://127.0.0.1:8080/ --rate 2000 --duration 30s
    """


def request_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that shape requests and connections, shared by `load` and `find-capacity`."""
    for option in reversed(_REQUEST_OPTIONS):
        command = option(command)
    return command


_REQUEST_OPTIONS = [
    click.option(
        "-t", "--threads", type=click.IntRange(min=1), help="Worker threads [default: CPUs available]."
    ),
    click.option(
        "-c",
        "--connections",
        type=click.IntRange(min=1),
        help="Open model: most requests in flight [default: rate × 1 s]. Closed: users if --users absent.",
    ),
    click.option("-m", "--method", default="GET", show_default=True),
    click.option(
        "-H", "--header", "headers", multiple=True, help="Request header 'Name: value' (repeatable)."
    ),
    click.option("--body", help="Request body (HTTP) or payload (TCP)."),
    click.option(
        "--body-file", type=click.Path(path_type=Path), help="Read the body or payload from a file."
    ),
    click.option(
        "--template", is_flag=True, help="Replace {seq} in the body with a per-request sequence number."
    ),
    click.option("--framing", type=click.Choice(["line", "u32", "mllp"]), help="TCP framing (tcp:// URLs)."),
    click.option(
        "--timeout", "timeout_s", type=DURATION, default=30.0, show_default=True, help="Per request."
    ),
]


LOAD_EPILOG = """
\b
Models:
  open   --rate R [--schedule poisson] [--ramp-to R2] | --steps 100:5s,200:5s
         requests leave on schedule whatever the replies do; latency is timed from the
         intended send time (coordinated omission corrected); when --connections requests
         are already outstanding a send is counted as dropped, never delayed.
  closed --users N [--think 100ms --think-dist exponential]
         N users each send, wait for the reply, think, repeat (like wrk -c N).
\b
Examples:
  caplab load http://127.0.0.1:8080/ --rate 2000 --duration 30s --warmup 5s
  caplab load http://127.0.0.1:8080/ --users 50 --duration 10s --json
  caplab load http://127.0.0.1:8080/orders -m POST -H 'Content-Type: text/xml' \\
      --body '<order id="{seq}"/>' --template --rate 500
  caplab load tcp://127.0.0.1:2575 --framing mllp --body-file adt.hl7 --rate 100
\b
Exit codes: 0 done, 1 target unreachable, 2 bad arguments, 130 interrupted (results kept).
"""


@main.command(epilog=LOAD_EPILOG)
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
@request_options
@click.option(
    "-n", "--max-requests", type=click.IntRange(min=1), help="Stop after this many measured requests."
)
@click.option(
    "--interval", "interval_s", type=DURATION, default=1.0, show_default=True, help="Snapshot interval."
)
@click.option("--seed", type=int, default=0, help="Seed for Poisson arrivals.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def load(as_json: bool, **options: Any) -> None:
    """Drive load at URL (http:// or tcp://) and measure it: one trial."""
    try:
        plan = build_plan(LoadOptions(**options))
    except UsageProblem as e:
        raise click.UsageError(str(e)) from e
    try:
        code = run_load(plan, as_json)
    except PlanError as e:
        raise click.UsageError(str(e)) from e
    except TargetUnreachable as e:
        click.echo(f"caplab: {e}", err=True)
        sys.exit(1)
    sys.exit(code)


@main.command()
@click.option("--quick", is_flag=True, help="A reduced matrix with short trials: about 3 minutes.")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("caplab-demo"),
    show_default=True,
    help="Where the study file, msgbus's stores and the report go.",
)
@click.option("--db", help="Results store URL [default: $CAPLAB_DB or sqlite:///caplab.db].")
@click.option(
    "-o",
    "--report-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the report goes [default: DIR/report].",
)
def demo(quick: bool, workdir: Path, db: str | None, report_dir: Path | None) -> None:
    """Run the BizTalk scale-out study on msgbus and write its sizing report.

    \b
    The full study (1-4 processing hosts x 1 and 4 message stores x messaging and
    orchestration flows) takes about 15 minutes; --quick about 3. Exit codes as `caplab run`.
    """
    from caplab.demo import run_demo

    sys.exit(run_demo(quick, workdir, db, report_dir or workdir / "report"))


DB_HELP = "Results store URL [default: $CAPLAB_DB or sqlite:///caplab.db]; postgresql://… for PostgreSQL."


@main.command("run")
@click.argument("study_file", type=click.Path(path_type=Path))
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the study and its cells as one JSON object.")
@click.option(
    "--resume", is_flag=True, help="Continue the newest unfinished run of this study; skip complete cells."
)
@click.option(
    "-o",
    "--report-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the sizing report goes [default: ./reports/study-ID].",
)
def run_study(study_file: Path, db: str | None, as_json: bool, resume: bool, report_dir: Path | None) -> None:
    """Run a study file: every cell of the factor matrix, its trials and resources, into the store;
    then write its sizing report (index.html, report.md, results.json) and print where.

    \b
    Exit codes: 0 all cells complete, 1 some cells failed (the rest are kept),
    2 bad study file, 130 interrupted (finished cells kept; continue with --resume).
    """
    from caplab.study.cli import run_study_command

    sys.exit(run_study_command(study_file, db, as_json, resume, report_dir))


@main.command("ls")
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON list instead of a table.")
def list_studies(db: str | None, as_json: bool) -> None:
    """List the studies in the results store, newest first."""
    from caplab.store.commands import cmd_ls

    sys.exit(cmd_ls(db, as_json))


@main.command()
@click.argument("study", default="latest")
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="The whole study (cells, trials, events) as JSON.")
def show(study: str, db: str | None, as_json: bool) -> None:
    """Show a study: STUDY is an id, a name or `latest`."""
    from caplab.store.commands import cmd_show

    sys.exit(cmd_show(db, study, as_json))


@main.command()
@click.argument("study")
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default="csv", show_default=True
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Directory (csv, parquet) or file (json)."
)
@click.option("--db", help=DB_HELP)
def export(study: str, fmt: str, output: Path | None, db: str | None) -> None:
    """Export a study's cells, trials, intervals and resource samples."""
    from caplab.store.commands import cmd_export

    sys.exit(cmd_export(db, study, fmt, output))


@main.command()
@click.argument("study", default="latest")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory to write into [default: ./reports/study-ID].",
)
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help='Print {"report": DIR, "files": [...]} instead.')
def report(study: str, output: Path | None, db: str | None, as_json: bool) -> None:
    """Write the sizing report of a study (an id, a name or `latest`): index.html, report.md,
    results.json. Prints the path of index.html."""
    from caplab.report.commands import cmd_report

    sys.exit(cmd_report(db, study, output, as_json))


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


@main.command("find-capacity", epilog=FIND_EPILOG)
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
    "--warmup", "warmup_s", type=DURATION, default=1.0, show_default=True, help="Warm-up of each trial."
)
@request_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def find_capacity(as_json: bool, **options: Any) -> None:
    """Find the highest load URL sustains within the SLO, and what limits it."""
    from caplab.analysis.commands import find_capacity_command

    try:
        code = find_capacity_command(as_json=as_json, **options)
    except UsageProblem as e:
        raise click.UsageError(str(e)) from e
    sys.exit(code)


@main.command("fit-usl")
@click.argument("csv_file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--predict", type=float, multiple=True, help="Also predict throughput at this N (repeatable).")
def fit_usl(csv_file: Path, as_json: bool, predict: tuple[float, ...]) -> None:
    """Fit the Universal Scalability Law to CSV_FILE (columns n,throughput; repeated n allowed)."""
    from caplab.analysis.commands import fit_usl_command

    sys.exit(fit_usl_command(csv_file, as_json, list(predict)))


@main.group("systems")
def systems() -> None:
    """The reference systems caplab ships: real servers to size, with built-in studies."""


@systems.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON list instead of a table.")
def systems_list(as_json: bool) -> None:
    """List the reference systems."""
    import json

    from caplab.systems.catalog import SYSTEMS, as_dicts

    if as_json:
        click.echo(json.dumps(as_dicts(), indent=2))
        return
    for s in SYSTEMS:
        click.echo(
            f"{click.style(s.name, bold=True)}  ({s.stands_in_for})\n  {s.summary}\n  e.g. {s.example}"
        )


@systems.command("start", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def systems_start(name: str, args: tuple[str, ...]) -> None:
    """Run reference system NAME in the foreground with its own options (see NAME --help).

    \b
    caplab systems start msgbus --hosts 2 --stores 4
    caplab systems start msgbus --help
    """
    from caplab.systems.catalog import SYSTEMS, exec_system, find

    system = find(name)
    if system is None:
        known = ", ".join(s.name for s in SYSTEMS)
        raise click.UsageError(f"no reference system {name!r} (known: {known})")
    exec_system(system, list(args))


if __name__ == "__main__":
    main()
