"""`caplab systems`: list the reference systems and run one in the foreground."""

from __future__ import annotations

import json

import click

from caplab.systems.catalog import SYSTEMS, as_dicts, exec_system, find


@click.group("systems")
def systems_command() -> None:
    """The reference systems caplab ships: real servers to size, with built-in studies."""


@systems_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON list instead of a table.")
def systems_list_command(as_json: bool) -> None:
    """List the reference systems."""
    if as_json:
        click.echo(json.dumps(as_dicts(), indent=2))
        return
    for s in SYSTEMS:
        click.echo(
            f"{click.style(s.name, bold=True)}  ({s.stands_in_for})\n  {s.summary}\n  e.g. {s.example}"
        )


@systems_command.command(
    "start", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def systems_start_command(name: str, args: tuple[str, ...]) -> None:
    """Run reference system NAME in the foreground with its own options (see NAME --help).

    \b
    caplab systems start msgbus --hosts 2 --stores 4
    caplab systems start msgbus --help
    """
    system = find(name)
    if system is None:
        known = ", ".join(s.name for s in SYSTEMS)
        raise click.UsageError(f"no reference system {name!r} (known: {known})")
    exec_system(system, list(args))
