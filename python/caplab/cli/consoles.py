"""The consoles commands print to. Piped into another program, a table keeps whole values (no
cell is cut to fit 80 columns), so `caplab ls | grep NAME` finds NAME."""

from __future__ import annotations

from rich.console import Console

PIPE_WIDTH = 100_000
"""Width given to a console that is not a terminal: wide enough that no table is ever cut."""


def stdout() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


def stderr() -> Console:
    return Console(stderr=True)
