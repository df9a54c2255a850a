"""``--generator-cpus`` / ``--sut-cpus`` for `caplab load` and `caplab find-capacity`: the generator
(caplab's process, its engine threads and collectors) on CPUs of its own for the run, the system's
processes (those ``--sut-pid``/``--sut-match`` name, with their children) on others, and both put
back where they were afterwards (caplab.profiles.placement does the work)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import click
from rich.console import Console

from caplab.collect import RoleCollector, RoleSpec
from caplab.engine import UsageProblem
from caplab.profiles import ProfileError
from caplab.profiles.placement import CpuPlacement, Placed, format_cpus, host_cpus, parse_cpus, plan_placement

__all__ = ["cli_placement", "placement_options"]


def placement_options(command: Callable[..., None]) -> Callable[..., None]:
    """The two options, on a command whose function takes ``generator_cpus`` and ``sut_cpus``."""
    command = click.option(
        "--sut-cpus",
        metavar="CPUS",
        help="The system's CPUs (e.g. 1 or 1-3): the processes --sut-pid/--sut-match name are moved "
        "there for the run and back after; caplab stays off them. Default with --generator-cpus: the rest.",
    )(command)
    return click.option(
        "--generator-cpus",
        metavar="CPUS",
        help="Run caplab (the generator) on these CPUs only, e.g. 0; the report says where each ran. "
        "Default with --sut-cpus: the rest.",
    )(command)


def _requested(generator: str | None, system: str | None) -> dict[str, str]:
    available = host_cpus()
    try:
        if generator is None:
            assert system is not None
            generator = format_cpus([c for c in available if c not in parse_cpus(system)])
        if system is None:
            system = format_cpus([c for c in available if c not in parse_cpus(generator)])
    except ProfileError as e:
        raise UsageProblem(str(e)) from e
    if not generator or not system:
        raise UsageProblem(
            f"--generator-cpus and --sut-cpus need a CPU each; this host has {format_cpus(available)}"
        )
    return {"generator": generator, "system": system}


@contextlib.contextmanager
def cli_placement(
    generator_cpus: str | None, sut_cpus: str | None, roles: list[RoleSpec], err: Console
) -> Iterator[CpuPlacement | None]:
    """The placement for the block, stated on stderr; None when neither option was given."""
    if generator_cpus is None and sut_cpus is None:
        yield None
        return
    try:
        placement = plan_placement(_requested(generator_cpus, sut_cpus))
    except ProfileError as e:
        raise UsageProblem(str(e)) from e
    if not placement.isolated:
        err.print(f"caplab: could not isolate: {placement.describe()}", markup=False, highlight=False)
        yield placement
        return
    try:
        with Placed(placement) as place:
            place.move_system(sorted({pid for role in roles if role.host is None for pid in _pids(role)}))
            err.print(placement.describe(), markup=False, highlight=False)
            yield placement
    except ProfileError as e:
        raise UsageProblem(f"placement: {e}") from e


def _pids(role: RoleSpec) -> frozenset[int]:
    """The role's processes now, its children included."""
    collector = RoleCollector(role)
    collector.start()
    return collector.pids


def pop_placement(options: dict[str, Any]) -> tuple[str | None, str | None]:
    """Takes the two options out of a command's keyword arguments."""
    return options.pop("generator_cpus", None), options.pop("sut_cpus", None)
