"""The one error idsync's commands report: a sentence for the operator, never a traceback."""

from __future__ import annotations


class IdsyncError(RuntimeError):
    """Something the operator can act on (a directory not running, a refused bind, a bad flag).
    The message never contains a password."""
