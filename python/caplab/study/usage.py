"""A usage profile as the engine runs it: each validated action of a study's ``load.usage`` (or of
``caplab load --usage FILE``) becomes one `UsageAction`, its body file read relative to the file
that named it."""

from __future__ import annotations

from pathlib import Path

from caplab.engine import UsageAction
from caplab.spec import UsageSpec


def usage_actions(usage: UsageSpec, directory: Path) -> tuple[UsageAction, ...]:
    """The profile's actions in file order, rates per user-hour, bodies read from their files."""
    return tuple(
        UsageAction(
            name=name,
            per_hour=action.rate_per_hour,
            method=action.method,
            path=action.path,
            headers=tuple(action.headers.items()),
            body=_read(directory / action.body_file) if action.body_file else action.body or "",
            template=action.template,
        )
        for name, action in usage.actions.items()
    )


def _read(path: Path) -> str:
    """A body file exactly as written: its line ends kept (a message's CRLFs are the protocol's)."""
    return path.read_bytes().decode("utf-8")
