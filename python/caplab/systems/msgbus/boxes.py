"""Opening a message store by kind: SQLite files by default, PostgreSQL schemas given a URL."""

from __future__ import annotations

from pathlib import Path

from caplab.systems.msgbus.messagebox import MessageBox
from caplab.systems.msgbus.postgres_box import PostgresMessageBox
from caplab.systems.msgbus.sqlite_box import SqliteMessageBox


def open_messagebox(index: int, *, data_dir: Path, store_url: str | None, master: bool) -> MessageBox:
    """Store ``index``, created empty: a SQLite file in ``data_dir``, or the PostgreSQL schema
    ``msgbus_store<index>`` in ``store_url``'s database."""
    if store_url is None:
        return SqliteMessageBox(data_dir / f"messagebox{index}.db", master=master)
    return PostgresMessageBox(store_url, f"msgbus_store{index}", master=master)
