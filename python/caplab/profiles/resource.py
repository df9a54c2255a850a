"""The one interface every resource kind implements (cpu, memory, volumes, links)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from caplab.profiles.errors import ProfileError

Usage = dict[str, int | float | str]


class RoleResource(Protocol):
    """A piece of a role's hardware. ``create`` applies it (raising ``ProfileError`` with the
    cause); a process joins it by being launched under ``enter_argv`` and writing its pid into
    ``procs_files`` (``attach`` does the latter for a process already running); ``usage`` reads
    what the kernel counted; ``remove`` undoes ``create`` and is safe to call twice."""

    kind: str

    def create(self) -> None: ...

    def procs_files(self) -> list[Path]: ...

    def enter_argv(self) -> list[str]: ...

    def attach(self, pid: int) -> None: ...

    def usage(self) -> Usage: ...

    def remove(self) -> None: ...


def write_pid(procs_files: list[Path], pid: int) -> None:
    for procs in procs_files:
        try:
            procs.write_text(str(pid))
        except OSError as exc:
            raise ProfileError(f"cgroup {procs.parent}: cannot move pid {pid}: {exc.strerror}") from exc
