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
