"""The `caplab` group's table of commands: every entry loads, is the command it is listed as, and
its click handler is named for it (one scheme: ``find-capacity`` → ``find_capacity_command``);
`caplab --help` lists them all without importing any."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from caplab.cli.app import COMMANDS, SUMMARIES, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_command_loads_under_its_own_name(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert COMMANDS[name].endswith(":" + name.replace("-", "_") + "_command")
    # its line in the group's help is its own: it opens as the command's help does
    assert " ".join((command.help or "").split()[:3]) == " ".join(SUMMARIES[name].split()[:3])


def test_the_groups_help_lists_every_command_without_importing_them() -> None:
    listing = "\n".join(
        ["import sys", "from caplab.cli import main", "try:", "    main(['--help'])", "except SystemExit:",
         "    pass", "print(sorted(m for m in ('pandas', 'scipy', 'caplab.cli.run') if m in sys.modules))"]
    )  # fmt: skip
    done = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]"), done.stdout[-300:]
    assert set(SUMMARIES) == set(COMMANDS)
    for name, summary in SUMMARIES.items():
        assert f"{name} " in done.stdout and summary[:30] in done.stdout.replace("\n", " "), name
