"""The `caplab` group's table of commands: every entry loads, is the command it is listed as, and
its click handler is named for it (one scheme: ``find-capacity`` → ``find_capacity_command``)."""

from __future__ import annotations

import click
import pytest

from caplab.cli.app import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_command_loads_under_its_own_name(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert COMMANDS[name].endswith(":" + name.replace("-", "_") + "_command")
