"""The MessageBox on SQLite: one file per store, WAL journal, ``synchronous=FULL`` so a commit that
returned is on disk (an acknowledgement means the document survives a power cut)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from caplab.systems.msgbus.messagebox import Stored, subscription_rows

SCHEMA = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    interchange_id INTEGER NOT NULL,
    message_type TEXT NOT NULL,
    body TEXT NOT NULL
);
"""
SUBSCRIPTIONS = """
CREATE TABLE subscriptions (
    message_type TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    subscriber TEXT NOT NULL
);
"""


class SqliteMessageBox:
    def __init__(self, path: Path, *, master: bool) -> None:
        for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            stale.unlink(missing_ok=True)
        self.description = f"sqlite {path}"
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        if master:
            self._db.executescript(SUBSCRIPTIONS)
            self._db.executemany("INSERT INTO subscriptions VALUES (?, ?, ?)", subscription_rows())

    def begin(self) -> None:
        self._db.execute("BEGIN")

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def insert(self, messages: Sequence[Stored]) -> None:
        self._db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)", messages)

    def read(self, message_ids: Sequence[int]) -> list[Stored]:
        marks = ",".join("?" * len(message_ids))
        return self._db.execute(f"SELECT * FROM messages WHERE id IN ({marks})", message_ids).fetchall()

    def delete(self, message_ids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM messages WHERE id = ?", [(i,) for i in message_ids])

    def stored_ids(self) -> list[int]:
        return [row[0] for row in self._db.execute("SELECT id FROM messages ORDER BY id")]

    def count(self) -> int:
        (n,) = self._db.execute("SELECT count(*) FROM messages").fetchone()
        return int(n)

    def subscriptions(self) -> list[tuple[str, str, str]]:
        return self._db.execute("SELECT message_type, kind, subscriber FROM subscriptions").fetchall()

    def close(self) -> None:
        self._db.close()
