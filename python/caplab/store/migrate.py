"""Bringing a store's schema to the newest revision, on every open, with Alembic.

The migrations ship inside the package (``caplab/store/migrations``), so no ``alembic.ini`` is
needed. The upgrade runs in one write transaction on the store's own connection: SQLite takes
its write lock, PostgreSQL an advisory lock, so two processes opening a new store at once do
not both create the tables.

A new revision is a file in ``migrations/versions`` (``script.py.mako`` is its template), written
out in full, and ``HEAD`` below names it; ``tests/store/test_store_schema.py`` fails until the
file, ``HEAD`` and ``schema.py`` agree.

A store already at ``HEAD`` opens without Alembic: its revision is one plain query. Importing
Alembic and scanning the scripts took 0.6 s of CPU, paid by every command that opens a store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text

from caplab.store.connect import WRITE_OPTION
from caplab.store.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

HEAD = "0003"
"""The newest revision in ``migrations/versions``."""
VERSION_TABLE = "alembic_version"

MIGRATIONS = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x6361706C6162  # "caplab": one key for every caplab store on a server


def _config() -> Config:
    from alembic.config import Config

    cfg = Config()
    # ConfigParser interpolation: a '%' in the install path must be doubled.
    cfg.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest revision as Alembic reads it from the scripts (``HEAD`` must agree)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the package ships at least one migration"
    return head


def current_revision(engine: Engine) -> str | None:
    """The store's revision, None for a new store; as Alembic keeps it, in one row of its table."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        revision = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        return None if revision is None else str(revision)


def upgrade(engine: Engine, redacted_url: str) -> None:
    """Migrates to head unless already there; refuses a store written by a newer caplab."""
    current = current_revision(engine)
    if current == HEAD:
        return
    from alembic import command
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    known = {s.revision for s in script.walk_revisions()}
    if current is not None and current not in known:
        raise StoreError(
            f"the results store {redacted_url} has schema revision {current}, newer than this caplab "
            "knows: upgrade caplab to read it"
        )
    cfg = _config()
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
