"""The options of the commands that run a study file through ``cmd_run`` (`run`, `demo`, `studies
run`): each defined once, so that every command handing it to ``cmd_run`` spells, types and names
it alike. Where the commands' defaults differ, the help that says so is given."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

Decorator = Callable[[Callable[..., None]], Callable[..., None]]

IN_WORKDIR = "Where the report goes [default: DIR/report]."
"""The report's place for the commands that run a copy of a study in a folder DIR (`demo`,
`studies run`)."""

json_option: Decorator = click.option(
    "--json", "as_json", is_flag=True, help="Print the study and its cells as one JSON object."
)
"""``--json``: the study and its cells as one JSON object instead of the summary."""


def report_dir_option(help: str = IN_WORKDIR) -> Decorator:
    """``-o/--report-dir DIR``: where the sizing report goes."""
    return click.option("-o", "--report-dir", type=click.Path(path_type=Path, file_okay=False), help=help)


def junit_option(help: str) -> Decorator:
    """``--junit FILE``: the verdicts written as JUnit, for CI."""
    return click.option("--junit", "junit_path", type=click.Path(path_type=Path, dir_okay=False), help=help)
