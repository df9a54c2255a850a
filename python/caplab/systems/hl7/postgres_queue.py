"""The queue on PostgreSQL: the same table in a schema of its own (``hl7`` unless the URL's
``options`` or ``CAPLAB_HL7_SCHEMA`` say otherwise), kept across restarts like the SQLite file.

A commit returns once PostgreSQL has flushed its WAL (the server's default ``synchronous_commit``),
so an AA means durable here too; PostgreSQL's own data directory holds that WAL (``pg_wal``, which
``initdb --waldir`` puts on a volume of its own). Each batch is one statement over arrays, so a
group of messages costs a few round trips, not one per message. Claims use ``FOR UPDATE SKIP
LOCKED``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import psycopg
from psycopg import sql

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
from caplab.systems.secrets import describe, redact

SCHEMA_ENV = "CAPLAB_HL7_SCHEMA"
DEFAULT_SCHEMA = "hl7"
TABLES = """
CREATE TABLE IF NOT EXISTS messages (
    id bigserial PRIMARY KEY,
    channel integer NOT NULL,
    control_id text NOT NULL,
    message_type text NOT NULL,
    patient_id text,
    received_at double precision NOT NULL,
    state text NOT NULL,
    updated_at double precision,
    body text NOT NULL,
    document bytea,
    error text
);
CREATE TABLE IF NOT EXISTS rejected (
    id bigserial PRIMARY KEY,
    channel integer NOT NULL,
    received_at double precision NOT NULL,
    reason text NOT NULL,
    body bytea NOT NULL
);
"""
SCHEMA = TABLES + INDEX_SCHEMA
INSERT = """
INSERT INTO messages (channel, control_id, message_type, patient_id, received_at, state, body)
SELECT c, i, t, p, r, 'queued', b
FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::text[]) AS u(c, i, t, p, r, b)
ON CONFLICT (channel, control_id) DO NOTHING
RETURNING channel, control_id
"""
CLAIM = """
UPDATE messages SET state = 'transforming', updated_at = %s
WHERE id IN (
    SELECT id FROM messages WHERE state = 'queued' AND channel = %s ORDER BY id LIMIT %s
    FOR UPDATE SKIP LOCKED
)
RETURNING id, control_id, body
"""


class PostgresQueue:
    def __init__(self, url: str, *, create: bool = False) -> None:
        schema = os.environ.get(SCHEMA_ENV, DEFAULT_SCHEMA)
        self.description = f"postgresql {redact(url)} schema {schema}"
        try:
            # Named for pg_stat_activity: which engine (schema) each connection belongs to.
            self._db = psycopg.connect(url, connect_timeout=10, application_name=f"hl7 {schema}")
            name = sql.Identifier(schema)
            if create:
                self._db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            self._db.execute(sql.SQL("SET search_path TO {}").format(name))
            if create:
                self._db.execute(SCHEMA)
            self._db.commit()
        except psycopg.Error as e:
            raise QueueUnavailable(f"cannot connect to {redact(url)}: {describe(e)}") from None

    def enqueue(self, messages: Sequence[Incoming], rejects: Sequence[Rejected]) -> list[bool]:
        try:
            inserted: set[tuple[int, str]] = set()
            if messages:
                columns = (
                    [m.channel for m in messages],
                    [m.control_id for m in messages],
                    [m.message_type for m in messages],
                    [m.patient_id for m in messages],
                    [m.received_at for m in messages],
                    [m.body for m in messages],
                )
                inserted = {(c, i) for c, i in self._db.execute(INSERT, columns).fetchall()}
            if rejects:
                with self._db.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO rejected (channel, received_at, reason, body) VALUES (%s, %s, %s, %s)",
                        [(r.channel, r.received_at, r.reason, r.body) for r in rejects],
                    )
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        new = []
        for m in messages:  # the first of a control id in the batch is the one inserted
            key = (m.channel, m.control_id)
            new.append(key in inserted)
            inserted.discard(key)
        return new

    def claim(self, channel: int, limit: int, now: float) -> list[Claimed]:
        try:
            rows = self._db.execute(CLAIM, (now, channel, limit)).fetchall()
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        return sorted(Claimed(*row) for row in rows)

    def resume(self, channel: int) -> list[Transformed]:
        try:
            self._db.execute(
                "UPDATE messages SET state = 'queued' WHERE state = 'transforming' AND channel = %s",
                (channel,),
            )
            rows = self._db.execute(
                "SELECT id, control_id, document FROM messages WHERE state = 'transformed' AND channel = %s "
                "ORDER BY id",
                (channel,),
            ).fetchall()
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        return [Transformed(i, c, bytes(d)) for i, c, d in rows]

    def store_transformed(
        self, done: Sequence[Transformed], failed: Sequence[tuple[int, str]], now: float
    ) -> None:
        try:
            if done:
                self._db.execute(
                    "UPDATE messages SET state = 'transformed', document = u.d, updated_at = %s "
                    "FROM unnest(%s::bigint[], %s::bytea[]) AS u(i, d) WHERE id = u.i",
                    (now, [t.id for t in done], [t.document for t in done]),
                )
            if failed:
                self._db.execute(
                    "UPDATE messages SET state = 'failed', error = u.e, updated_at = %s "
                    "FROM unnest(%s::bigint[], %s::text[]) AS u(i, e) WHERE id = u.i",
                    (now, [i for i, _ in failed], [e for _, e in failed]),
                )
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise

    def mark_written(self, ids: Sequence[int], now: float) -> None:
        try:
            self._db.execute(
                "UPDATE messages SET state = 'written', updated_at = %s WHERE id = ANY(%s)", (now, list(ids))
            )
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise

    def counts(self) -> dict[int, ChannelCounts]:
        out = tally(self._db.execute(COUNT_STATES).fetchall(), self._db.execute(COUNT_REJECTED).fetchall())
        self._db.commit()
        return out

    def reindex(self) -> None:
        self._db.execute("REINDEX TABLE messages")
        self._db.commit()

    def close(self) -> None:
        self._db.close()
