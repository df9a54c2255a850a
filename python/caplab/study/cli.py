"""`caplab run`: load the study, run it into the store, print the summary or the JSON document."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from caplab.analysis.scaling import study_scaling
from caplab.spec import SpecError, load_study
from caplab.store import Store, StoreError, default_url
from caplab.study.progress import StudyProgress, scaling_line, summary_table
from caplab.study.runner import StudyRunner

EXIT_FAILED_CELLS = 1
EXIT_BAD_STUDY = 2
EXIT_INTERRUPTED = 130


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


def run_study_command(
    study_file: Path, db: str | None, as_json: bool, resume: bool, report_dir: Path | None = None
) -> int:
    try:
        study = load_study(study_file)
    except SpecError as e:
        click.echo(f"caplab: {e}", err=True)
        return EXIT_BAD_STUDY
    try:
        store = Store(db or default_url())
    except StoreError as e:
        click.echo(f"caplab: {e}", err=True)
        return EXIT_FAILED_CELLS
    progress = StudyProgress()
    try:
        outcome = StudyRunner(study, store, progress).run(resume=resume)
    finally:
        progress.close()
    document = store.study_document(outcome.study_id)
    document["scaling"] = study_scaling(document)
    report = write_study_report(store, outcome.study_id, report_dir)
    if as_json:
        json.dump(document, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        console = Console()
        console.print(summary_table(document, console))
        for fit in document["scaling"]:
            console.print(scaling_line(fit))
        console.print(f"stored as study {outcome.study_id} in {store.url} — `caplab show {outcome.study_id}`")
    if report is not None:
        click.echo(f"report: {report}", err=True)
    if outcome.status == "interrupted":
        click.echo(f"interrupted: resume with `caplab run {study_file} --resume`", err=True)
        return EXIT_INTERRUPTED
    return EXIT_FAILED_CELLS if outcome.cells_failed else 0
