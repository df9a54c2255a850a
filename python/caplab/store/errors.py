"""The errors the store raises for problems a user can fix (unreachable database, unknown study)."""

from __future__ import annotations


class StoreError(Exception):
    """A message fit for the terminal: it names the store by its redacted URL, never a password."""


class NotFound(StoreError, KeyError):
    """No such study, cell or trial. A KeyError too, as the repository's contract promises."""

    def __str__(self) -> str:
        # KeyError would quote the message; this one is meant to be read.
        return str(self.args[0]) if self.args else "not found"


class StudyNotFound(NotFound):
    """``caplab show 42`` when there is no study 42."""
