"""An HL7 sender for the hl7 engine's tests: each channel's messages over a connection of its own
(one message in flight, as an MLLP sender does), resending on a new connection what a broken one
left unacknowledged; the control ids each channel acknowledged AA."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from caplab.systems.hl7 import RunningHl7, mllp
from caplab.systems.hl7.message import ack_code

Start = Callable[..., RunningHl7]
"""``start(channels, **options)``: the ``start_hl7`` fixture."""
Batch = Sequence[tuple[str, bytes]]


def send_one(port: int, body: bytes) -> bytes:
    with mllp.Connection("127.0.0.1", port, timeout_s=30) as conn:
        return conn.send(body)


def send_channel(
    port: int, messages: Batch, between: Callable[[int], None] | None = None, retry_s: float = 0.0
) -> list[str]:
    """Sends ``messages`` in order; the control ids acknowledged AA. ``between(n)`` runs after the
    n-th acknowledgement. With ``retry_s``, a broken connection is reopened (for up to that long)
    and the unacknowledged message sent again, and so is a message answered AR (not queued)."""
    acked: list[str] = []
    channel = _Channel(port, retry_s)
    for i, (control_id, body) in enumerate(messages, start=1):
        reply = channel.send(control_id, body)
        if ack_code(reply) != "AA":
            raise AssertionError(f"{control_id}: not accepted: {reply!r}")
        acked.append(control_id)
        if between is not None:
            between(i)
    channel.close()
    return acked


class _Channel:
    """One MLLP connection to a channel, reopened on demand; with ``retry_s``, a message is sent
    again (for up to that long) when the connection breaks or the answer is AR (not queued)."""

    def __init__(self, port: int, retry_s: float) -> None:
        self.port = port
        self.retry_s = retry_s
        self.conn: mllp.Connection | None = None

    def send(self, control_id: str, body: bytes) -> bytes:
        give_up = 0.0
        while True:
            try:
                return self._send_once(control_id, body)
            except OSError:
                self.close()
                if not self.retry_s:
                    raise
                give_up = give_up or time.monotonic() + self.retry_s
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.1)

    def _send_once(self, control_id: str, body: bytes) -> bytes:
        if self.conn is None:
            self.conn = mllp.Connection("127.0.0.1", self.port, timeout_s=30)
        reply = self.conn.send(body)
        if self.retry_s and ack_code(reply) == "AR":
            raise ConnectionRefusedError(f"{control_id} not queued: {reply!r}")
        return reply

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def send_channels(
    ports: Sequence[int],
    batches: Sequence[Batch],
    between: Callable[[int], None] | None = None,
    retry_s: float = 0.0,
) -> list[list[str]]:
    """Each batch to its channel's port concurrently; per channel the control ids acknowledged.
    ``between`` runs on channel 0's thread."""
    acked: list[list[str]] = [[] for _ in batches]
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            acked[k] = send_channel(ports[k], batches[k], between if k == 0 else None, retry_s)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return acked


def written_files(out_dir: Path, channel: int) -> list[str]:
    """Control ids of the channel's files (names are ``<control id>.json``; partial files skipped)."""
    return sorted(p.name.removesuffix(".json") for p in (out_dir / f"channel-{channel}").glob("*.json"))


def db_rows(db: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    """A read of the engine's SQLite queue from another connection (what is committed)."""
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(query, params).fetchall()
