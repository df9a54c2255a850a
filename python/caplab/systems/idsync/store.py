"""The idsync store: connector space, metaverse, export and counters, in SQLite or PostgreSQL.

Where the files go (the paper's rule: database, log and tempdb on different volumes):

- SQLite. ``--data DIR`` holds the database ``idsync.db`` (connector space, metaverse, export) and
  its rollback journal. ``--log DIR`` holds ``idsync-log.db``, the change log: one row per object
  per operation (staged, projected, joined, provisioned, exported), attached to the same
  connection and written in the same transaction as the change it records, so SQLite commits both
  files atomically (a super-journal) — the sequential, fsync-on-commit stream a database log volume
  carries. (SQLite cannot put a database's own journal elsewhere: it refuses a symlinked journal,
  and WAL files always sit beside the database.) ``--temp DIR`` is where SQLite spills sorts,
  index builds and statement journals (``PRAGMA temp_store_directory``: deprecated but still
  compiled in, and the only switch that works once the process has started — SQLITE_TMPDIR is read
  when the sqlite3 module loads; it is process-wide, so the last store opened decides).
  Rollback-journal mode with ``synchronous=FULL``: a commit is on disk
  when it returns.
- PostgreSQL (``--store postgresql://…``): schemas ``idsync`` and ``idsync_log`` in that database;
  placing data, WAL and temp files is the server's business (tablespaces, ``initdb --waldir``,
  ``temp_tablespaces``), so ``--data/--log/--temp`` are refused with it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caplab.systems.idsync.errors import IdsyncError

COUNTERS = ("staged", "synced", "exported")
DB_NAME = "idsync.db"
LOG_NAME = "idsync-log.db"
PG_SCHEMA = "idsync"
PG_LOG_SCHEMA = "idsync_log"

TABLES = """
CREATE TABLE IF NOT EXISTS connector_space (
    ma TEXT NOT NULL,
    anchor TEXT NOT NULL,
    join_key TEXT,
    attributes TEXT NOT NULL,
    mv_id {id_ref},
    state SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (ma, anchor)
);
CREATE TABLE IF NOT EXISTS metaverse (
    id {id_key},
    employee_number TEXT NOT NULL UNIQUE,
    attributes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS export (
    target TEXT NOT NULL,
    mv_id {id_ref} NOT NULL,
    dn TEXT NOT NULL,
    attributes TEXT NOT NULL,
    exported SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (target, mv_id)
);
CREATE INDEX IF NOT EXISTS export_pending_in_order ON export (target, mv_id) WHERE exported = 0;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS {log}.change_log (
    seq {id_key},
    operation TEXT NOT NULL,
    ma TEXT,
    anchor TEXT,
    mv_id {id_ref}
);
"""
"""``state`` of a connector-space object: STAGED (changed since the last sync), SYNCED, or
FILTERED (no join key: a disconnector, left out of the metaverse)."""
STAGED, SYNCED, FILTERED = 0, 1, 2
DATA_TABLES = ("connector_space", "metaverse", "export")


@dataclass(frozen=True)
class Placement:
    """Where the SQLite store's database, change log and temp files go (None: beside the data)."""

    data: Path | None = None
    log: Path | None = None
    temp: Path | None = None

    @property
    def given(self) -> bool:
        return any(p is not None for p in (self.data, self.log, self.temp))


@dataclass(frozen=True)
class Counts:
    connector_space: int
    metaverse: int
    export: int
    """Export rows written to their target (provisioned and exported)."""
    export_pending: int


class Store:
    """One connection to the store. Statements are written with ``?`` marks (SQLite's style) and
    rewritten to ``%s`` for psycopg, so one text serves both."""

    def __init__(self, url: str | None, placement: Placement) -> None:
        self.description, self.dialect = describe_store(url, placement)
        self.log_schema = "log" if self.dialect == "sqlite" else PG_LOG_SCHEMA
        self._db: Any
        if self.dialect == "sqlite":
            self._db = open_sqlite(url, placement)
        else:
            self._db = open_postgres(url or "")
        self.create_schema()

    # statements ----------------------------------------------------------------------------

    def _sql(self, text: str) -> str:
        text = text.replace("{log}", self.log_schema)
        return text if self.dialect == "sqlite" else text.replace("?", "%s")

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(self._sql(text), params)

    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.dialect == "sqlite":
            self._db.executemany(self._sql(text), rows)
        else:
            with self._db.cursor() as cursor:
                cursor.executemany(self._sql(text), rows)

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.execute(text, params).fetchall())

    def scalar(self, text: str, params: Sequence[Any] = ()) -> Any:
        row = self.execute(text, params).fetchone()
        return None if row is None else row[0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit: committed if the block returns, rolled back if it raises."""
        if self.dialect == "sqlite":
            self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.dialect == "postgresql":
                self._db.rollback()
            elif self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        if self.dialect == "sqlite":
            self._db.execute("COMMIT")
        else:
            self._db.commit()

    # schema, counters, counts --------------------------------------------------------------

    def create_schema(self) -> None:
        if self.dialect == "sqlite":
            ddl = TABLES.format(id_key="INTEGER PRIMARY KEY", id_ref="INTEGER", log="log")
            self._db.executescript(ddl)
        else:
            ddl = TABLES.format(
                id_key="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                id_ref="BIGINT",
                log=PG_LOG_SCHEMA,
            )
            self._db.execute(ddl)
            self._db.commit()
        with self.transaction():
            for name in COUNTERS:
                self.execute("INSERT INTO counters VALUES (?, 0) ON CONFLICT (name) DO NOTHING", (name,))

    def reset(self) -> None:
        """Empties connector space, metaverse, export and change log and zeroes the counters (the
        paper reset MIIS before every run)."""
        with self.transaction():
            for table in (*DATA_TABLES, "{log}.change_log"):
                self.execute(f"DELETE FROM {table}")
            self.execute("UPDATE counters SET value = 0")
        if self.dialect == "sqlite":
            self._db.execute("VACUUM")
            self._db.execute("VACUUM log")

    def add_to_counter(self, name: str, amount: int) -> None:
        self.execute("UPDATE counters SET value = value + ? WHERE name = ?", (amount, name))

    def counters(self) -> dict[str, int]:
        return {str(name): int(value) for name, value in self.rows("SELECT name, value FROM counters")}

    def log_changes(self, rows: Sequence[tuple[str, str | None, str | None, int | None]]) -> None:
        self.executemany(
            "INSERT INTO {log}.change_log (operation, ma, anchor, mv_id) VALUES (?, ?, ?, ?)", rows
        )

    def counts(self) -> Counts:
        return Counts(
            int(self.scalar("SELECT count(*) FROM connector_space")),
            int(self.scalar("SELECT count(*) FROM metaverse")),
            int(self.scalar("SELECT count(*) FROM export WHERE exported = 1")),
            int(self.scalar("SELECT count(*) FROM export WHERE exported = 0")),
        )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_store(url: str | None, placement: Placement) -> tuple[str, str]:
    """(a description without secrets, the dialect), or an IdsyncError for a URL it cannot use."""
    if url is None or url.startswith("sqlite:///"):
        return f"sqlite {sqlite_path(url, placement)}", "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        if placement.given:
            raise IdsyncError(
                "--data/--log/--temp place SQLite's files; with PostgreSQL placement is the server's "
                "(tablespaces, initdb --waldir, temp_tablespaces)"
            )
        return f"postgresql {redact(url)}", "postgresql"
    raise IdsyncError(f"--store must be sqlite:///PATH or postgresql://…, got {redact(url)}")


def sqlite_path(url: str | None, placement: Placement) -> Path:
    if url is not None:
        if placement.data is not None:
            raise IdsyncError("give either --store sqlite:///PATH or --data DIR, not both")
        return Path(url.removeprefix("sqlite:///"))
    if placement.data is None:
        raise IdsyncError("no store: give --data DIR (SQLite in DIR) or --store URL")
    return placement.data / DB_NAME


def open_sqlite(url: str | None, placement: Placement) -> sqlite3.Connection:
    path = sqlite_path(url, placement)
    log_path = (placement.log or path.parent) / LOG_NAME
    for directory in (path.parent, log_path.parent, placement.temp):
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA temp_store=FILE")
        if placement.temp is not None:
            db.execute(f"PRAGMA temp_store_directory = {quote(str(placement.temp.resolve()))}")
        db.execute("ATTACH DATABASE ? AS log", (str(log_path),))
        db.execute("PRAGMA log.journal_mode=DELETE")
        db.execute("PRAGMA log.synchronous=FULL")
    except sqlite3.Error as e:
        raise IdsyncError(f"cannot open the SQLite store {path}: {e}") from None
    return db


def open_postgres(url: str) -> Any:
    import psycopg

    try:
        db = psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as e:
        raise IdsyncError(f"cannot connect to {redact(url)}: {str(e).splitlines()[0]}") from None
    db.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
    db.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_LOG_SCHEMA}")
    db.execute(f"SET search_path TO {PG_SCHEMA}")
    db.commit()
    return db


def quote(text: str) -> str:
    """An SQL string literal (a PRAGMA takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def redact(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
