"""The MessageBox on PostgreSQL: one schema per store (``msgbus_store0``, …) in the given database,
dropped and created afresh at start. A commit returns once PostgreSQL has flushed its WAL (with the
server's default ``synchronous_commit``), so an acknowledgement means durable here too. Each batch is
one statement over arrays, so a group commit costs a few round trips, not one per message.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from caplab.systems.msgbus.messagebox import Stored, subscription_rows
from caplab.systems.secrets import describe, redact

SCHEMA = """
CREATE TABLE messages (
    id bigint PRIMARY KEY,
    interchange_id bigint NOT NULL,
    message_type text NOT NULL,
    body text NOT NULL
);
"""
SUBSCRIPTIONS = """
CREATE TABLE subscriptions (
    message_type text PRIMARY KEY,
    kind text NOT NULL,
    subscriber text NOT NULL
);
"""
INSERT = """
INSERT INTO messages SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[])
"""


class MessageBoxUnavailable(RuntimeError):
    """PostgreSQL refused or could not be reached; the message never contains the password."""


class PostgresMessageBox:
    def __init__(self, url: str, schema: str, *, master: bool) -> None:
        self.description = f"postgresql {redact(url)} schema {schema}"
        try:
            self._db = psycopg.connect(url, connect_timeout=10)
        except psycopg.Error as e:
            raise MessageBoxUnavailable(f"cannot connect to {redact(url)}: {describe(e)}") from None
        name = sql.Identifier(schema)
        self._db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(name))
        self._db.execute(sql.SQL("CREATE SCHEMA {}").format(name))
        self._db.execute(sql.SQL("SET search_path TO {}").format(name))
        self._db.execute(SCHEMA)
        if master:
            self._db.execute(SUBSCRIPTIONS)
            with self._db.cursor() as cur:
                cur.executemany("INSERT INTO subscriptions VALUES (%s, %s, %s)", subscription_rows())
        self._db.commit()

    def begin(self) -> None:
        """Nothing to send: psycopg opens the transaction with the first statement."""

    def commit(self) -> None:
        self._db.commit()

    def rollback(self) -> None:
        self._db.rollback()

    def insert(self, messages: Sequence[Stored]) -> None:
        ids, iids, types, bodies = zip(*messages, strict=True)
        self._db.execute(INSERT, (list(ids), list(iids), list(types), list(bodies)))

    def read(self, message_ids: Sequence[int]) -> list[Stored]:
        return self._db.execute("SELECT * FROM messages WHERE id = ANY(%s)", (list(message_ids),)).fetchall()

    def delete(self, message_ids: Sequence[int]) -> None:
        self._db.execute("DELETE FROM messages WHERE id = ANY(%s)", (list(message_ids),))

    def stored_ids(self) -> list[int]:
        return [row[0] for row in self._db.execute("SELECT id FROM messages ORDER BY id")]

    def count(self) -> int:
        row = self._db.execute("SELECT count(*) FROM messages").fetchone()
        return int(row[0]) if row else 0

    def subscriptions(self) -> list[tuple[str, str, str]]:
        return self._db.execute("SELECT message_type, kind, subscriber FROM subscriptions").fetchall()

    def close(self) -> None:
        self._db.close()
