"""`caplab run` and `caplab demo`: load the study, run it into the store, write the report, print
the summary or the JSON document."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from caplab import studies
from caplab.cli import consoles, exits
from caplab.cli.cluster import cluster_options
from caplab.cli.options import DB_HELP
from caplab.cli.study_options import json_option, junit_option, report_dir_option
from caplab.cli.web import start_live, web_option
from caplab.spec import SpecError, Study, load_study

if TYPE_CHECKING:
    from caplab.live import LiveServer
    from caplab.store import Store
    from caplab.study.runner import StudyOutcome

DEMO_STUDY = "biztalk-scaleout"
DEMO_FULL = "study.yaml"
DEMO_QUICK = "quick.yaml"


@click.command("run")
@click.argument("study_file", type=click.Path(path_type=Path))
@click.option("--db", help=DB_HELP)
@json_option
@click.option(
    "--resume", is_flag=True, help="Continue the newest unfinished run of this study; skip complete cells."
)
@report_dir_option("Where the sizing report goes [default: ./reports/study-ID].")
@click.option(
    "--no-report",
    is_flag=True,
    help="Write no sizing report (a script reading --json needs none; `caplab report ID` writes it later).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve each interval's figures in Prometheus format on 127.0.0.1:PORT/metrics while running.",
)
@junit_option(
    "Write the verdicts (each cell's capacity and trials, the goal) to FILE as JUnit, for CI; "
    "a capacity not found or a goal not met then exits 3."
)
@web_option
@cluster_options
def run_command(
    study_file: Path,
    db: str | None,
    as_json: bool,
    resume: bool,
    report_dir: Path | None,
    no_report: bool,
    metrics_port: int | None,
    junit_path: Path | None,
    web_port: int | None,
    cluster: str | None,
    agents: int | None,
) -> None:
    """Run a study file: every cell of the factor matrix, its trials and resources, into the store;
    then write its sizing report (index.html, report.md, results.json) and print where.

    \b
    Exit codes: 0 all cells complete, 1 some cells failed (the rest are kept),
    2 bad study file, 3 with --junit: a capacity not found or the goal not met,
    130 interrupted (finished cells kept; continue with --resume).

    \b
    Watch it in a browser while it runs (the address is printed first):
      caplab run study.yaml --web          http://127.0.0.1:8089/
      caplab run study.yaml --web=0        a free port
    """
    if no_report and report_dir is not None:
        click.echo("caplab: -o/--report-dir and --no-report contradict each other: give one", err=True)
        sys.exit(exits.USAGE)
    sys.exit(
        cmd_run(
            study_file,
            db,
            as_json,
            resume,
            report_dir,
            metrics_port,
            cluster,
            agents,
            junit_path,
            web_port,
            report=not no_report,
        )
    )


@click.command("demo")
@click.option("--quick", is_flag=True, help="A reduced matrix with short trials: about 3 minutes.")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("caplab-demo"),
    show_default=True,
    help="Where the study file, msgbus's stores and the report go.",
)
@click.option("--db", help=DB_HELP)
@report_dir_option()
def demo_command(quick: bool, workdir: Path, db: str | None, report_dir: Path | None) -> None:
    """Run the BizTalk scale-out study on msgbus and write its sizing report.

    \b
    The full study (1-4 processing hosts x 1 and 4 message stores x messaging and
    orchestration flows, each searched 3 times) takes about 40 minutes; --quick about 3.
    Exit codes as `caplab run`.
    """
    sys.exit(cmd_demo(quick, workdir, db, report_dir or workdir / "report"))


def cmd_demo(quick: bool, workdir: Path, db: str | None, report_dir: Path | None) -> int:
    """The BizTalk scale-out study (seeds/000) on msgbus, end to end — capacity of every
    configuration, the limit named, the scale-out fitted, the sizing report written — from a copy
    of the built-in study in ``workdir`` (``caplab run DIR/study.yaml`` runs it again)."""
    folder = studies.prepare(DEMO_STUDY, workdir)
    study_file = folder / (DEMO_QUICK if quick else DEMO_FULL)
    consoles.stderr().print(
        "[bold]caplab demo[/]: the BizTalk Server scale-out study (seeds/000) on msgbus, caplab's own "
        "messaging system — receive → MessageBox stores → processing hosts → back-end sink.\n"
        + (
            "Quick: the messaging flow on 1 store with 1–4 hosts, short trials (about 3 minutes).\n"
            if quick
            else "Full: 1–4 hosts × 1 and 4 stores × messaging and orchestration, each searched 3 times "
            "(about 40 minutes; --quick for a 3-minute cut).\n"
        )
        + "For every configuration caplab searches the highest rate of documents received and "
        "processed within the SLO, names what limits it, fits the scale-out and writes the report.\n"
        f"Study file: {study_file}",
        highlight=False,
    )
    return cmd_run(study_file, db, as_json=False, resume=False, report_dir=report_dir)


def write_study_report(store: Store, study_id: int, report_dir: Path | None) -> Path | None:
    """Writes the sizing report; a failure to write it costs the report, never the results."""
    from caplab.report import write_report

    try:
        files = write_report(store, study_id, report_dir)
    except OSError as e:
        click.echo(
            f"caplab: the report could not be written ({e}); `caplab report {study_id}` retries", err=True
        )
        return None
    return files.html


def cmd_run(
    study_file: Path,
    db: str | None,
    as_json: bool,
    resume: bool,
    report_dir: Path | None = None,
    metrics_port: int | None = None,
    cluster: str | None = None,
    agents: int | None = None,
    junit: Path | None = None,
    web_port: int | None = None,
    report: bool = True,
) -> int:
    """Runs the study into the store, writes its report unless ``report`` is false, and prints the
    summary or the JSON document; the exit code."""
    try:
        study = load_study(study_file)
    except SpecError as e:
        click.echo(f"caplab: {e}", err=True)
        return exits.USAGE
    if cluster is None and agents is None and study.cells:  # the study's own, unless the command's
        cluster, agents = study.cells[0].config.cluster, study.cells[0].config.agents
    # The runner, the store, the fits and the report load scipy, pandas and the plotting
    # libraries: only once the study file has parsed, so a bad file is answered at once.
    from caplab.analysis.scaling import study_scaling
    from caplab.store import Store, StoreError, default_url

    try:
        store = Store(db or default_url())
    except StoreError as e:
        click.echo(f"caplab: {e}", err=True)
        return exits.FAILED
    live = start_live(web_port)
    try:
        outcome = run_study(study, store, resume, metrics_port, cluster, agents, live)
        if isinstance(outcome, int):
            show_finished(live, "failed", None)
            return outcome
        document = store.study_document(outcome.study_id).to_json()
        document["scaling"] = study_scaling(document)
        written = write_study_report(store, outcome.study_id, report_dir) if report else None
        show_finished(live, outcome.status, written)
        return finish_run(document, store, outcome, written, study_file, as_json, junit)
    finally:
        if live is not None:
            live.stop()


def show_finished(live: LiveServer | None, status: str, report: Path | None) -> None:
    """The live page's last state: how the study ended, and its report (served beside the page)."""
    if live is not None:
        href = live.serve_report(report.parent) if report is not None else None
        live.apply(lambda s: s.finish(status, report=href))


def finish_run(
    document: dict[str, Any],
    store: Store,
    outcome: StudyOutcome,
    report: Path | None,
    study_file: Path,
    as_json: bool,
    junit: Path | None,
) -> int:
    """The summary (or the JSON document), where the report is, and the exit code."""
    if as_json:
        json.dump(document, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        print_study_summary(document, store, outcome.study_id)
    if report is not None:
        click.echo(f"report: {report}", err=True)
    if outcome.status == "interrupted":
        click.echo(f"interrupted: resume with `caplab run {study_file} --resume`", err=True)
        return exits.INTERRUPTED
    if outcome.cells_failed:
        return exits.FAILED
    return write_gate(store, outcome.study_id, junit) if junit is not None else exits.OK


def write_gate(store: Store, study_id: int, path: Path) -> int:
    """`--junit`: the study's verdicts as JUnit; exit 3 when a capacity was not found or the goal
    not met."""
    from caplab.report.document import load_results
    from caplab.report.junit import gate_failed, study_cases, write_junit

    cases = study_cases(load_results(store, study_id))
    click.echo(f"JUnit: {write_junit(path, f'caplab study {study_id}', cases)}", err=True)
    return exits.SLO_FAILED if gate_failed(cases) else exits.OK


def run_study(
    study: Study,
    store: Store,
    resume: bool,
    metrics_port: int | None,
    cluster: str | None,
    agents: int | None,
    live: LiveServer | None = None,
) -> StudyOutcome | int:
    """Runs every cell with the progress display (and the live metrics endpoint and page if asked for);
    the outcome, or the exit code when the hardware, the cluster or the options stop it first."""
    from caplab.cli.cluster import plan_runner
    from caplab.cli.load import start_publisher
    from caplab.cli.progress import StudyProgress
    from caplab.cli.publish import PublishingObserver
    from caplab.cluster.errors import ClusterUnreachable
    from caplab.engine import UsageProblem
    from caplab.study.hardware import HardwareUnavailable
    from caplab.study.observer import Observers, StudyObserver
    from caplab.study.runner import StudyRunner

    publisher = start_publisher(metrics_port)
    progress = StudyProgress()
    try:
        observer: StudyObserver = (
            PublishingObserver(progress, publisher) if publisher is not None else progress
        )
        if live is not None:
            from caplab.live import LiveObserver

            observer = Observers(observer, LiveObserver(live))
        with plan_runner(cluster, agents) as runner:
            return StudyRunner(study, store, observer, runner).run(resume=resume)
    except (HardwareUnavailable, ClusterUnreachable) as e:
        click.echo(f"caplab: {e}", err=True)
        return exits.FAILED
    except UsageProblem as e:  # --agents without --cluster
        click.echo(f"caplab: {e}", err=True)
        return exits.USAGE
    finally:
        progress.close()
        if publisher is not None:
            publisher.stop()


def print_study_summary(document: dict[str, Any], store: Store, study_id: int) -> None:
    """The cells' table, the replicates' spread and the scale-out fits, then where the study is stored."""
    from caplab.cli.progress import replicates_line, scaling_line, summary_table

    console = consoles.stdout()
    console.print(summary_table(document, console))
    if (replicated := replicates_line(document)) is not None:
        console.print(replicated, highlight=False)
    for fit in document["scaling"]:
        console.print(scaling_line(fit))
    console.print(f"stored as study {study_id} in {store.url} — `caplab show {study_id}`")
