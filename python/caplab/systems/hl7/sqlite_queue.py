"""The queue on SQLite: one file, WAL journal, ``synchronous=FULL``, so a commit that returned is
on disk and an AA means the message survives a power cut.

Every process of the engine opens the file (the receiver, one worker per channel); write
transactions start with ``BEGIN IMMEDIATE`` so two writers queue on SQLite's lock instead of
deadlocking, and each is one group of messages, not one message.

Where the files go: SQLite writes its log (the WAL) to ``<db>-wal`` beside the database, always
(it opens it with ``O_NOFOLLOW``, so not even a symbolic link can move it), and its shared-memory
index to ``<db>-shm``. To put the log on a volume of its own, use PostgreSQL (its ``pg_wal``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from caplab.systems.hl7.queue import (
    COUNT_REJECTED,
    COUNT_STATES,
    INDEX_SCHEMA,
    ChannelCounts,
    Claimed,
    Incoming,
    QueueUnavailable,
    Rejected,
    Transformed,
    tally,
)

BUSY_TIMEOUT_S = 600.0
"""How long a writer waits for SQLite's lock: a REINDEX of millions of rows holds it for minutes
(the paper's "very slow" rebuilds), and the engine should stall through it, not fail."""
TABLES = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    channel INTEGER NOT NULL,
    control_id TEXT NOT NULL,
    message_type TEXT NOT NULL,
    patient_id TEXT,
    received_at REAL NOT NULL,
    state TEXT NOT NULL,
    updated_at REAL,
    body TEXT NOT NULL,
    document BLOB,
    error TEXT
);
CREATE TABLE IF NOT EXISTS rejected (
    id INTEGER PRIMARY KEY,
    channel INTEGER NOT NULL,
    received_at REAL NOT NULL,
    reason TEXT NOT NULL,
    body BLOB NOT NULL
);
"""
SCHEMA = TABLES + INDEX_SCHEMA
INSERT = """
INSERT INTO messages (channel, control_id, message_type, patient_id, received_at, state, body)
VALUES (?, ?, ?, ?, ?, 'queued', ?) ON CONFLICT (channel, control_id) DO NOTHING
"""
CLAIM = """
UPDATE messages SET state = 'transforming', updated_at = ?
WHERE id IN (SELECT id FROM messages WHERE state = 'queued' AND channel = ? ORDER BY id LIMIT ?)
RETURNING id, control_id, body
"""


class SqliteQueue:
    def __init__(self, path: str, *, create: bool = False) -> None:
        self.description = f"sqlite {path}"
        if not create and not Path(path).exists():
            raise QueueUnavailable(f"no queue database at {path}")
        try:
            # The receiver's committer thread is its only user (hence check_same_thread off).
            self._db = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            if create:
                self._db.executescript(SCHEMA)
        except sqlite3.Error as e:
            raise QueueUnavailable(f"cannot open {path}: {e}") from None

    def _write(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def enqueue(self, messages: Sequence[Incoming], rejects: Sequence[Rejected]) -> list[bool]:
        self._write()
        try:
            new = []
            for m in messages:
                cur = self._db.execute(
                    INSERT, (m.channel, m.control_id, m.message_type, m.patient_id, m.received_at, m.body)
                )
                new.append(cur.rowcount == 1)
            self._db.executemany(
                "INSERT INTO rejected (channel, received_at, reason, body) VALUES (?, ?, ?, ?)",
                [(r.channel, r.received_at, r.reason, r.body) for r in rejects],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return new

    def claim(self, channel: int, limit: int, now: float) -> list[Claimed]:
        # A read first: an idle worker polling an empty channel takes no write lock.
        if (
            self._db.execute(
                "SELECT 1 FROM messages WHERE state = 'queued' AND channel = ? LIMIT 1", (channel,)
            ).fetchone()
            is None
        ):
            return []
        self._write()
        try:
            rows = self._db.execute(CLAIM, (now, channel, limit)).fetchall()
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return sorted(Claimed(*row) for row in rows)

    def resume(self, channel: int) -> list[Transformed]:
        self._write()
        try:
            self._db.execute(
                "UPDATE messages SET state = 'queued' WHERE state = 'transforming' AND channel = ?",
                (channel,),
            )
            rows = self._db.execute(
                "SELECT id, control_id, document FROM messages WHERE state = 'transformed' AND channel = ? "
                "ORDER BY id",
                (channel,),
            ).fetchall()
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return [Transformed(*row) for row in rows]

    def store_transformed(
        self, done: Sequence[Transformed], failed: Sequence[tuple[int, str]], now: float
    ) -> None:
        self._write()
        try:
            self._db.executemany(
                "UPDATE messages SET state = 'transformed', document = ?, updated_at = ? WHERE id = ?",
                [(t.document, now, t.id) for t in done],
            )
            self._db.executemany(
                "UPDATE messages SET state = 'failed', error = ?, updated_at = ? WHERE id = ?",
                [(reason, now, i) for i, reason in failed],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def mark_written(self, ids: Sequence[int], now: float) -> None:
        self._write()
        try:
            self._db.executemany(
                "UPDATE messages SET state = 'written', updated_at = ? WHERE id = ?", [(now, i) for i in ids]
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def counts(self) -> dict[int, ChannelCounts]:
        return tally(self._db.execute(COUNT_STATES), self._db.execute(COUNT_REJECTED))

    def reindex(self) -> None:
        self._db.execute("REINDEX messages")

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._db.close()
