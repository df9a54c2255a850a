"""Database URLs: which driver to use, and how to show a URL without its password.

Users write ``postgresql://user:pw@host/db``; SQLAlchemy would pick psycopg2 for that, so the
store rewrites it to psycopg 3, the driver caplab ships with. Anything printed or stored goes
through ``redact_url``/``scrub`` first: a password must never reach a terminal, a report or the store.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from caplab.store.codec import json_safe
from caplab.units import scrub

__all__ = ["describe", "engine_url", "redact_url", "scrub", "scrub_json", "sqlite_path"]


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``: safe to print or write into a report."""
    masked = scrub(url)  # first, so that an unencoded '@' in a password cannot leak its tail
    try:
        return make_url(masked).render_as_string(hide_password=True)
    except ArgumentError:
        return masked


def scrub_json(value: Any) -> Any:
    """``value`` (JSON-like) with URL passwords masked in every string and non-finite floats nulled."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {str(k): scrub_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_json(v) for v in value]
    return json_safe(value)


def describe(error: BaseException) -> str:
    """A database error in the driver's own words, on one line, without any password."""
    orig = getattr(error, "orig", None)
    return scrub(" ".join(str(orig if orig is not None else error).split()))


def engine_url(url: str) -> URL:
    """The SQLAlchemy URL to connect with: ``postgresql://`` (and ``postgres://``) use psycopg 3."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def sqlite_path(url: str) -> str | None:
    """The file a SQLite URL points at, or None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return parsed.database
