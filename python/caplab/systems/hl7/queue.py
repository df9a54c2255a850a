"""The durable queue: one messages table in a database, each step of a message a state change.

    queued ──claim──▶ transforming ──▶ transformed ──write──▶ written
                                   └─▶ failed (kept, with the reason)

A message is acknowledged once its ``queued`` row is committed; a channel's worker claims queued
rows (one commit), transforms them and stores the documents (``transformed``, one commit), writes
them out, and marks them ``written`` (one commit). A worker that dies leaves ``transforming`` or
``transformed`` rows behind; the next worker of that channel resumes them (``resume``), and since
an output is named by its control id and replaced atomically, writing one again is harmless:
every acknowledged message is written exactly once.

Malformed input goes to the ``rejected`` table in the same commit as its neighbours, so an AE, too,
is only sent for what is kept. Rows are never deleted: like an interface engine's message store, the
table grows, and its indexes (the control id, unique per channel; the patient id; the received
time; the state) are what ``rebuild-index`` rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

STATES = ("queued", "transforming", "transformed", "written", "failed")
INDEXES = ("messages_control_id", "messages_patient_id", "messages_received_at", "messages_state")
INDEX_SCHEMA = """
CREATE UNIQUE INDEX IF NOT EXISTS messages_control_id ON messages (channel, control_id);
CREATE INDEX IF NOT EXISTS messages_patient_id ON messages (patient_id);
CREATE INDEX IF NOT EXISTS messages_received_at ON messages (received_at);
CREATE INDEX IF NOT EXISTS messages_state ON messages (state, channel);
"""
"""The indexes, written alike in SQLite and PostgreSQL: each database's schema ends with them."""
assert all(name in INDEX_SCHEMA for name in INDEXES)
COUNT_STATES = "SELECT channel, state, count(*) FROM messages GROUP BY channel, state"
COUNT_REJECTED = "SELECT channel, count(*) FROM rejected GROUP BY channel"
URL_ENV = "CAPLAB_HL7_DB"
"""The database URL, as the engine's processes pass it to each other (never on a command line)."""


class QueueUnavailable(RuntimeError):
    """The database cannot be opened or reached; the message never contains a password."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message to queue, as the receiver read it."""

    channel: int
    control_id: str
    message_type: str
    patient_id: str | None
    received_at: float
    body: str


@dataclass(frozen=True, slots=True)
class Rejected:
    channel: int
    received_at: float
    reason: str
    body: bytes


@dataclass(frozen=True, slots=True, order=True)
class Claimed:
    id: int
    control_id: str
    body: str


@dataclass(frozen=True, slots=True)
class Transformed:
    id: int
    control_id: str
    document: bytes


@dataclass
class ChannelCounts:
    """Rows of one channel by state, and its rejected messages."""

    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    rejected: int = 0

    @property
    def queued_total(self) -> int:
        """Every message ever queued on the channel (whatever its state now)."""
        return sum(self.states.values())

    @property
    def transformed_total(self) -> int:
        return self.states["transformed"] + self.states["written"]

    @property
    def depth(self) -> int:
        """Messages acknowledged and not yet written or failed."""
        return self.states["queued"] + self.states["transforming"] + self.states["transformed"]


def tally(
    states: Iterable[tuple[int, str, int]], rejected: Iterable[tuple[int, int]]
) -> dict[int, ChannelCounts]:
    """Each channel's counts from the rows of COUNT_STATES and COUNT_REJECTED."""
    out: dict[int, ChannelCounts] = {}
    for channel, state, n in states:
        out.setdefault(channel, ChannelCounts()).states[state] = n
    for channel, n in rejected:
        out.setdefault(channel, ChannelCounts()).rejected = n
    return out


class Queue(Protocol):
    description: str

    def enqueue(self, messages: Sequence[Incoming], rejects: Sequence[Rejected]) -> list[bool]:
        """One commit: inserts the messages (True: new; False: a duplicate control id on its
        channel, already queued) and the rejects."""
        ...

    def claim(self, channel: int, limit: int, now: float) -> list[Claimed]:
        """Up to ``limit`` of the channel's queued rows, oldest first, now ``transforming``."""
        ...

    def resume(self, channel: int) -> list[Transformed]:
        """A worker's start: its channel's ``transforming`` rows back to ``queued``; the
        ``transformed`` ones returned, to be written."""
        ...

    def store_transformed(
        self, done: Sequence[Transformed], failed: Sequence[tuple[int, str]], now: float
    ) -> None: ...

    def mark_written(self, ids: Sequence[int], now: float) -> None: ...

    def counts(self) -> dict[int, ChannelCounts]: ...

    def reindex(self) -> None:
        """Rebuilds every index of the messages table (writers wait meanwhile, as in the paper)."""
        ...

    def close(self) -> None: ...


def open_queue(url: str, *, create: bool = False) -> Queue:
    """``sqlite:///path`` or ``postgresql://…`` (password from the URL given in the environment,
    ``PGPASSWORD`` or a passfile)."""
    if url.startswith("sqlite:///"):
        from caplab.systems.hl7.sqlite_queue import SqliteQueue

        return SqliteQueue(url.removeprefix("sqlite://"), create=create)
    if url.startswith(("postgresql://", "postgres://")):
        from caplab.systems.hl7.postgres_queue import PostgresQueue

        return PostgresQueue(url, create=create)
    raise QueueUnavailable(f"not a database URL (sqlite:///… or postgresql://…): {url.split('://')[0]}://…")
