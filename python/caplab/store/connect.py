"""Opening the database: SQLite tuned for a crash-safe single writer, PostgreSQL through psycopg 3.

SQLite: WAL (readers never block the writer, a killed writer leaves the last commit intact),
foreign keys on, and transactions begun by SQLAlchemy rather than by the sqlite3 module, which
would otherwise commit before DDL and start write transactions lazily. Write transactions take
the write lock up front (``BEGIN IMMEDIATE``) so two writers queue instead of failing mid-way.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

from caplab.store.urls import engine_url

WRITE_OPTION = "caplab_write"
"""Execution option marking a connection that will write (SQLite: ``BEGIN IMMEDIATE``)."""

_SQLITE_BUSY_TIMEOUT_S = 30.0
_PG_CONNECT_TIMEOUT_S = 10


def open_engine(url: str) -> Engine:
    """An engine for ``url``: ``sqlite:///path``, ``sqlite://`` (in memory) or ``postgresql://…``."""
    target = engine_url(url)
    if target.get_backend_name() != "sqlite":
        connect_args: dict[str, object] = {}
        if (
            target.drivername in ("postgresql+psycopg", "postgresql+psycopg2")
            and "connect_timeout" not in target.query
        ):
            # A firewalled host should fail the command in seconds, not hang it.
            connect_args["connect_timeout"] = _PG_CONNECT_TIMEOUT_S
        return create_engine(target, pool_pre_ping=True, connect_args=connect_args)
    in_memory = target.database in (None, "", ":memory:")
    if in_memory:
        # One shared connection, or every checkout would see a fresh empty database.
        engine = create_engine(target, connect_args={"check_same_thread": False}, poolclass=StaticPool)
    else:
        engine = create_engine(target, connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_S})
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" event issues BEGIN instead
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
    finally:
        cursor.close()


def _sqlite_on_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
