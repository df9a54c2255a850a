"""`caplab studies list | show | copy | run`: the built-in studies (the seed papers' reproductions)
by name, from an installed wheel in any directory. A study runs from a copy of its folder, so what
ran is there to read and edit and the systems' data live beside it, never inside the package."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.table import Table

from caplab import studies
from caplab.cli import consoles, exits
from caplab.cli.options import DB_HELP
from caplab.cli.study_options import json_option, junit_option, report_dir_option
from caplab.cli.web import web_option
from caplab.studies.catalog import CATALOG, BuiltInStudy, UnknownStudy, built_in, description, study_file


@click.group("studies")
def studies_command() -> None:
    """The built-in studies: each reproduces a seed paper's capacity study on real software.

    \b
      caplab studies list                          what there is, and how long each takes
      caplab studies show hl7-hardware             what it shows, its files, how to run it
      caplab studies run hl7-hardware --quick      copy it to ./hl7-hardware and run the quick cut
      caplab studies copy hl7-hardware mystudy/    copy its files to edit them, then `caplab run`
      caplab studies publish hl7-hardware          its stored run as the docs' results page
    """


@studies_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per study, as an array.")
def list_command(as_json: bool) -> None:
    """List the built-in studies: the paper each reproduces, its system, the time of its quick cut
    and of the whole study, and what it shows."""
    if as_json:
        click.echo(json.dumps([_as_json(s) for s in CATALOG], indent=2))
        return
    table = Table()
    for name in ("Study", "Seed paper", "System", "Quick", "Whole", "What it shows"):
        table.add_column(name)
    for s in CATALOG:
        table.add_row(s.name, s.seed, s.system, s.quick_time, s.full_time, s.shows)
    consoles.stdout().print(table)


@studies_command.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="The study's entry as one JSON object.")
def show_command(name: str, as_json: bool) -> None:
    """Show built-in study NAME: what it reproduces and shows, its files, and how to run each."""
    study = _lookup(name)
    if as_json:
        click.echo(json.dumps(_as_json(study) | {"description": description(study)}, indent=2))
        return
    lines = [
        f"{study.name}: seed {study.seed}, on {study.system}",
        description(study),
        f"Shows: {study.shows}.",
        f"Quick cut about {study.quick_time}; the whole study {study.full_time}.",
        "Run:",
        f"  caplab studies run {study.name} --quick     # quick.yaml",
        f"  caplab studies run {study.name}             # study.yaml, the whole study",
        *(f"  caplab studies run {study.name} --part {p.removesuffix('.yaml')}" for p in study.parts),
        f"Files ({', '.join(study.files)}): caplab studies copy {study.name} DIR",
    ]
    click.echo("\n".join(lines))


@studies_command.command("copy")
@click.argument("name")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def copy_command(name: str, directory: Path) -> None:
    """Copy built-in study NAME's files (study files and the documents it sends) into DIRECTORY, to
    read or edit them; `caplab run DIRECTORY/quick.yaml` then runs the copy. Files of the same
    name there are overwritten; nothing else is touched."""
    study = _lookup(name)
    folder = studies.prepare(study.name, directory)
    click.echo(f"{study.name}: {', '.join(study.files)} copied to {folder}")
    click.echo(f"run it: caplab run {folder / 'quick.yaml'}")


@studies_command.command("run")
@click.argument("name")
@click.option("--quick", is_flag=True, help="The quick cut (quick.yaml): minutes, as the tests run it.")
@click.option("--part", help="A part run on its own (see `caplab studies show NAME`), e.g. mirroring.")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the copy, the results and the report go [default: ./NAME].",
)
@click.option("--db", help=DB_HELP)
@json_option
@report_dir_option()
@junit_option("The verdicts as JUnit, for CI (as `caplab run --junit`).")
@web_option
def run_command(
    name: str,
    quick: bool,
    part: str | None,
    workdir: Path | None,
    db: str | None,
    as_json: bool,
    report_dir: Path | None,
    junit_path: Path | None,
    web_port: int | None,
) -> None:
    """Run built-in study NAME from a copy of its folder (DIR), and write its sizing report.

    \b
    Without --quick or --part, the whole study (`caplab studies list` says how long).
    Exit codes as `caplab run`: 0 all cells complete, 1 some failed, 2 bad
    arguments, 3 with --junit a capacity not found or the goal not met,
    130 interrupted (continue with `caplab run DIR/FILE --resume`).
    """
    from caplab.cli.run import cmd_run

    study = _lookup(name)
    if quick and part:
        _usage("--quick and --part name different files: give one")
    try:
        file = study_file(study, "quick" if quick else part or "study")
    except UnknownStudy as e:
        _usage(str(e))
    folder = studies.prepare(study.name, workdir or Path(study.name))
    report = report_dir or folder / "report"
    sys.exit(
        cmd_run(
            folder / file, db, as_json, resume=False, report_dir=report, junit=junit_path, web_port=web_port
        )
    )


@studies_command.command("publish")
@click.argument("names", nargs=-1)
@click.option("--db", help=DB_HELP)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("docs/studies/results"),
    show_default=True,
    help="The results directory of the docs: a folder per study, an index.md over them.",
)
@click.option(
    "--run",
    "run_first",
    type=click.Choice(["whole", "quick"]),
    help="Run the studies first (whole: each study.yaml and its parts, hours; quick: the quick "
    "cuts, minutes), each from a copy in ./results/NAME, into --db.",
)
@click.option("--json", "as_json", is_flag=True, help="The pages written, as one JSON object.")
def publish_command(
    names: tuple[str, ...], db: str | None, output: Path, run_first: str | None, as_json: bool
) -> None:
    """Write the results pages of built-in studies NAMES (all without) from their newest stored
    runs: the findings judged with the paper's figures beside, capacities with their intervals,
    limits, the machine, the command and how long it took. The whole study's run is preferred to
    the quick cut's; a page with no stored run is kept, or says how to run it.

    \b
      caplab studies run miis-disk --quick && caplab studies publish miis-disk
      caplab studies publish --run quick --db sqlite:///results/caplab.db
      make results          # every study in full (hours), then their pages
    """
    from caplab.cli.results_pages import cmd_publish, run_studies

    chosen = [_lookup(n) for n in names] if names else list(CATALOG)
    if run_first is not None:
        code = run_studies(db, chosen, Path("results"), quick=run_first == "quick")
        if code != exits.OK:
            sys.exit(code)
    sys.exit(cmd_publish(db, chosen, output, as_json))


def _lookup(name: str) -> BuiltInStudy:
    try:
        return built_in(name)
    except UnknownStudy as e:
        _usage(str(e))


def _usage(message: str) -> NoReturn:
    click.echo(f"caplab: {message}", err=True)
    sys.exit(exits.USAGE)


def _as_json(study: BuiltInStudy) -> dict[str, object]:
    return {
        "name": study.name,
        "seed": study.seed,
        "system": study.system,
        "shows": study.shows,
        "quick_time": study.quick_time,
        "full_time": study.full_time,
        "files": list(study.files),
    }
