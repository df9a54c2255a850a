"""The command line of a reference system that runs a set of servers in the foreground (pgpair,
pgha): ``start`` (the default command) builds or resumes the set in ``--data-dir``, prints its
ready lines and stays until SIGTERM/SIGINT or ``stop`` from another process; ``status``, the
system's own actions (``switchover`` …) and ``stop [--remove]`` open the set in ``--data-dir``,
and all but ``stop`` print JSON.

Why one module: ``caplab systems start NAME`` and the studies read what ``start`` prints
(``listening 127.0.0.1:PORT``, then ``NAME {json}``) and rely on how it ends (exit codes, one
stderr line per error, the servers stopped and a temporary directory removed), so every such
system must behave the same to the letter. What a system builds, its options and its commands'
JSON stay in its own cli.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

from caplab.systems import launch

POLL_S = 0.5
"""How often a foreground ``start`` looks whether ``stop`` was run elsewhere."""


class ServerSet(Protocol):
    """What the shared commands need of a built set: a status with ``nodes`` (each a ``name`` and
    a ``port``), a way to stop every server, and one to delete the set's files once stopped."""

    def status(self) -> dict[str, Any]: ...

    def stop(self) -> None: ...

    def remove(self) -> None: ...


S = TypeVar("S", bound=ServerSet)
Action = Callable[[S, argparse.Namespace], object]
"""A system's own command (``switchover`` …): does it to the opened set, returns what to print."""


def commands(actions: Iterable[str]) -> tuple[str, ...]:
    """Every command, in the order the help lists them: ``start``, ``status``, the system's
    actions, ``stop``."""
    return ("start", "status", *actions, "stop")


def parser(
    prog: str,
    description: str,
    what: str,
    actions: Iterable[str],
    start_options: Callable[[argparse.ArgumentParser], None],
    action_options: Callable[[str, argparse.ArgumentParser], None],
) -> argparse.ArgumentParser:
    """``start`` takes ``--data-dir`` (optional), the system's ``start_options`` and ``--detach``;
    every other command a required ``--data-dir``, each action its ``action_options``, and ``stop``
    also ``--remove``. ``what`` names the set in the help."""
    top = argparse.ArgumentParser(prog=prog, description=description)
    subparsers = top.add_subparsers(dest="command", required=True)
    start = subparsers.add_parser("start", help=f"build (or restart) the {what} and run it in the foreground")
    start.add_argument("--data-dir", type=Path, help=f"the {what}'s directory (default: a temporary one)")
    start_options(start)
    start.add_argument("--detach", action="store_true", help="return once started; `stop` ends it")
    for name in commands(actions)[1:]:
        sub = subparsers.add_parser(name)
        sub.add_argument("--data-dir", type=Path, required=True)
        action_options(name, sub)
        if name == "stop":
            sub.add_argument("--remove", action="store_true", help=f"delete the {what}'s files too")
    return top


def main(
    name: str,
    argv: Sequence[str] | None,
    top: argparse.ArgumentParser,
    actions: Iterable[str],
    run: Callable[[argparse.Namespace], int],
    errors: tuple[type[Exception], ...],
) -> NoReturn:
    """Parses ``argv`` (``start`` when it names no command), runs it and exits: ``errors`` as one
    line ``NAME: message`` on stderr and 1, Ctrl-C 130, a closed stdout 0; bad options 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in commands(actions) and args[0] not in ("-h", "--help")):
        args.insert(0, "start")  # `caplab systems start NAME --databases 20`
    options = top.parse_args(args)
    try:
        code = run(options)
    except errors as e:
        print(f"{name}: {str(e).strip()}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # `… status | head`
        code = 0
    sys.exit(code)


def run(
    options: argparse.Namespace,
    start: Callable[[argparse.Namespace], int],
    open_set: Callable[[Path], S],
    actions: Mapping[str, Action[S]],
) -> int:
    """Runs the command ``options`` name: ``start``; ``status`` and the actions print JSON of the
    set opened from ``--data-dir``; ``stop [--remove]``."""
    if options.command == "start":
        return start(options)
    servers = open_set(options.data_dir)
    if options.command == "status":
        print_json(servers.status())
    elif options.command == "stop":
        servers.stop()
        if options.remove:
            servers.remove()
    else:
        print_json(actions[options.command](servers, options))
    return 0


def start(
    name: str,
    detach: bool,
    build: Callable[[], S],
    leader: str,
    meant_to_run: Callable[[], bool],
    temporary: Path | None,
) -> int:
    """Builds (or resumes) the set, prints ``listening HOST:PORT`` (the address of the node
    that ``status()[leader]`` names) and ``NAME {status json}``; detached, returns at once.
    Otherwise waits until a signal or until ``meant_to_run()`` is false (``stop`` from
    elsewhere), then stops the set and removes ``temporary`` (a directory made for this run)."""
    stop = launch.stop_on_signals(detach)
    servers: S | None = None
    try:
        servers = build()
        status = servers.status()
        first = next(n for n in status["nodes"] if n["name"] == status[leader])
        print(f"listening {first.get('host', '127.0.0.1')}:{first['port']}", flush=True)
        print(f"{name} {json.dumps(status)}", flush=True)
        if detach:
            return 0
        while not stop.wait(POLL_S):
            if not meant_to_run():
                break  # `stop` from elsewhere
        return 0
    finally:
        if not detach:
            _shut(servers, temporary)


def _shut(servers: ServerSet | None, temporary: Path | None) -> None:
    launch.ignore_signals()  # finish stopping the servers first
    try:
        if servers is not None:
            servers.stop()
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def print_json(document: object) -> None:
    """What the commands other than ``start`` print: one indented JSON document."""
    print(json.dumps(document, indent=2), flush=True)
