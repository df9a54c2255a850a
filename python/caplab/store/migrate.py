"""Bringing a store's schema to the newest revision, on every open, with Alembic.

The migrations ship inside the package (``caplab/store/migrations``), so no ``alembic.ini`` is
needed. The upgrade runs in one write transaction on the store's own connection: SQLite takes
its write lock, PostgreSQL an advisory lock, so two processes opening a new store at once do
not both create the tables.

A new revision is a file in ``migrations/versions`` (``script.py.mako`` is its template), written
out in full; ``tests/store/test_store_schema.py`` fails until it and ``schema.py`` agree.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from caplab.store.connect import WRITE_OPTION
from caplab.store.errors import StoreError

MIGRATIONS = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x6361706C6162  # "caplab": one key for every caplab store on a server


def _config() -> Config:
    cfg = Config()
    # ConfigParser interpolation: a '%' in the install path must be doubled.
    cfg.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the package ships at least one migration"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, redacted_url: str) -> None:
    """Migrates to head unless already there; refuses a store written by a newer caplab."""
    script = ScriptDirectory.from_config(_config())
    current = current_revision(engine)
    if current == script.get_current_head():
        return
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
