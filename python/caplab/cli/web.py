"""`--web [PORT]`: the live page of a run, served while it runs (`caplab.live`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from caplab.live import LiveServer

DEFAULT_WEB_PORT = 8089

WEB_HELP = (
    "Show the run live in a browser: serve a page on 127.0.0.1:PORT (default "
    f"{DEFAULT_WEB_PORT}; 0 picks a free port) and print its address. It shows each cell's state, "
    "the trial's throughput, latency and errors per interval, each role's CPU and memory, the "
    "search's steps, then the finished run. Write --web=PORT before a positional argument."
)


def web_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--web",
        "web_port",
        type=click.IntRange(0, 65535),
        is_flag=False,
        flag_value=DEFAULT_WEB_PORT,
        default=None,
        metavar="[PORT]",
        help=WEB_HELP,
    )(command)


def start_live(port: int | None) -> LiveServer | None:
    """The live page's server, started, its address on stderr; a usage error when the port
    cannot be had."""
    if port is None:
        return None
    from caplab.live import LiveServer

    try:
        server = LiveServer(port)
    except OSError as e:
        raise click.UsageError(f"--web {port}: {e.strerror or e}") from e
    server.start()
    click.echo(f"live: {server.url}", err=True)
    return server
