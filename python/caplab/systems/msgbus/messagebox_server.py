"""MessageBox server ("store" in the flags and roles): the one process that owns a MessageBox and
serves it to receive and the processing hosts.

Requests arrive as JSON frames (protocol.py), one in flight per connection:

- ``{"op": "publish", "messages": [[interchange_id, type, body], …]}`` → ``{"ok": true}`` once
  stored durably;
- ``{"op": "claim", "max": n, "wait_ms": w}`` → ``{"ok": true, "messages": [[id, token,
  interchange_id, type, body], …]}``, each message leased (leases.py); with nothing claimable the
  claim waits (long poll) up to ``w`` ms for a publish or an expired lease, so idle hosts do not spin;
- ``{"op": "complete", "done": [[id, token], …], "republish": [[id, token, type, body], …]}`` →
  ``{"ok": true, "completed": n, "lost": k}``: deletes the completed messages and, in the same
  transaction, stores the orchestrations' successor messages; ``lost`` counts claims whose lease
  had expired (those messages are someone else's now);
- ``{"op": "depth"}`` → ``{"ok": true, "depth": n}`` (rows in the MessageBox, counted);
  ``{"op": "subscriptions"}`` → ``[[type, kind, subscriber], …]`` (the master only).

Group commit: every request that arrived while the previous transaction was committing is applied
in the next single transaction, and all of them are answered after its one durable commit. Under
load many publishes and completes share one fsync; at low load a request waits for one. Publishes
and completes go first in a group, so claims in the same group see their messages. A group of
claims alone writes nothing and costs no fsync.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from caplab.systems.counterfile import open_slot
from caplab.systems.msgbus import child
from caplab.systems.msgbus.boxes import open_messagebox
from caplab.systems.msgbus.counters import MessageBoxCounter
from caplab.systems.msgbus.leases import Leases
from caplab.systems.msgbus.messagebox import STORE_URL_ENV, MessageBox, Stored
from caplab.systems.msgbus.protocol import (
    Claimed,
    FrameBuffer,
    FrameTooLarge,
    JsonObject,
    Published,
    Republished,
    Token,
    decode,
    encode,
)

MAX_CLAIM = 1000
MAX_OUTSTANDING = 8
OK = encode({"ok": True})
DB_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, psycopg.Error)


class BadRequest(ValueError):
    """A request that does not follow the store protocol (answered with an error; the group goes on)."""


@dataclass
class Claim:
    connection: MessageBoxConnection
    limit: int
    deadline: float


class MessageBoxConnection(asyncio.Protocol):
    """One client's connection. Clients keep one request in flight; one that sends more has them
    queued up to MAX_OUTSTANDING, then its connection is not read until answers catch up."""

    def __init__(self, server: MessageBoxServer) -> None:
        self.server = server
        self.frames = FrameBuffer()
        self.transport: asyncio.Transport | None = None
        self.outstanding = 0
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.frames.feed(data)
        self._submit_buffered()

    def _submit_buffered(self) -> None:
        try:
            while self.outstanding < MAX_OUTSTANDING and (payload := self.frames.next_frame()) is not None:
                self.outstanding += 1
                self.server.submit(self, decode(payload))
        except (FrameTooLarge, ValueError) as e:
            if self.transport is not None:
                self.transport.write(encode({"ok": False, "error": f"protocol error: {e}"}))
                self.transport.close()
            return
        if self.transport is not None and self.outstanding >= MAX_OUTSTANDING and not self.paused:
            self.transport.pause_reading()
            self.paused = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    @property
    def open(self) -> bool:
        return self.transport is not None

    def reply(self, payload: bytes) -> None:
        self.outstanding -= 1
        if self.transport is None:
            return
        self.transport.write(payload)
        if self.paused and self.outstanding < MAX_OUTSTANDING:
            self.transport.resume_reading()
            self.paused = False
            self._submit_buffered()


class MessageBoxServer:
    """Applies requests to the MessageBox in group commits and parks claims that found nothing."""

    def __init__(self, box: MessageBox, lease_s: float, counters: memoryview, master: bool) -> None:
        self.box = box
        self.counters = counters
        self.master = master
        self.leases = Leases(lease_s)
        stored = box.stored_ids()
        self.leases.add(stored)
        self.next_id = (stored[-1] if stored else 0) + 1
        self.pending: list[tuple[MessageBoxConnection, JsonObject]] = []
        self.parked: list[Claim] = []
        self.wake = asyncio.Event()

    def submit(self, connection: MessageBoxConnection, request: JsonObject) -> None:
        self.pending.append((connection, request))
        self.wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if not self.pending:
                try:
                    async with asyncio.timeout(self._idle_timeout()):
                        await self.wake.wait()
                except TimeoutError:
                    pass
            self.wake.clear()
            self.group_commit()

    def _idle_timeout(self) -> float | None:
        """Until the first parked claim's wait ends or, with claims parked, the next lease expires."""
        if not self.parked:
            return None
        due = min(c.deadline for c in self.parked)
        expiry = self.leases.next_expiry()
        if expiry is not None:
            due = min(due, expiry)
        return max(0.0, due - time.time())

    def group_commit(self) -> None:
        batch, self.pending = self.pending, []
        now = time.time()
        expired = self.leases.expire(now)
        self.counters[MessageBoxCounter.EXPIRED] += expired
        if not batch and not expired and not any(c.deadline <= now for c in self.parked):
            return  # woken early: nothing to do yet
        replies: list[tuple[MessageBoxConnection, bytes]] = []
        claims: list[Claim] = []
        stored = 0
        try:
            self.box.begin()
            for connection, request in batch:
                try:
                    reply, added = self._apply(connection, request, claims)
                except BadRequest as e:
                    reply, added = encode({"ok": False, "error": str(e)}), 0
                stored += added
                if reply is not None:
                    replies.append((connection, reply))
            replies.extend(self._serve_claims(self._due_claims(stored + expired > 0, now) + claims, now))
            self.box.commit()
        except DB_ERRORS as e:
            self.box.rollback()
            error = encode({"ok": False, "error": f"the MessageBox failed: {e}"})
            for connection, _ in batch:
                connection.reply(error)
            child.fail("store", f"{self.box.description}: {e}")
        if any(request.get("op") in ("publish", "complete") for _, request in batch):
            self.counters[MessageBoxCounter.COMMITS] += 1
        for connection, reply in replies:
            connection.reply(reply)

    def _due_claims(self, claimable: bool, now: float) -> list[Claim]:
        """Parked claims to try again: all of them when messages became claimable, else only those
        whose wait is over (they get their empty answer)."""
        if claimable:
            due, self.parked = self.parked, []
            return due
        due = [c for c in self.parked if c.deadline <= now]
        if due:
            self.parked = [c for c in self.parked if c.deadline > now]
        return due

    def _store(self, messages: list[Stored]) -> None:
        self.box.insert(messages)
        self.leases.add([m[0] for m in messages])
        self.counters[MessageBoxCounter.PUBLISHED] += len(messages)

    def _apply(
        self, connection: MessageBoxConnection, request: JsonObject, claims: list[Claim]
    ) -> tuple[bytes | None, int]:
        """One request's work inside the group; returns its reply (None: a claim, answered later)
        and how many messages it stored."""
        op = request.get("op")
        if op == "publish":
            published = _published(request.get("messages"))
            first = self.next_id
            self.next_id += len(published)
            self._store([(first + i, iid, mtype, body) for i, (iid, mtype, body) in enumerate(published)])
            return OK, len(published)
        if op == "complete":
            return self._complete(
                _tokens(request.get("done", [])), _republished(request.get("republish", []))
            )
        if op == "claim":
            limit, wait_ms = request.get("max", 1), request.get("wait_ms", 0)
            if (
                not isinstance(limit, int)
                or not 1 <= limit <= MAX_CLAIM
                or not isinstance(wait_ms, int | float)
            ):
                raise BadRequest(f"claim wants max in 1…{MAX_CLAIM} and wait_ms ≥ 0")
            claims.append(Claim(connection, limit, time.time() + max(0.0, wait_ms) / 1000))
            return None, 0
        if op == "depth":
            return encode({"ok": True, "depth": self.box.count()}), 0
        if op == "subscriptions" and self.master:
            return encode({"ok": True, "subscriptions": self.box.subscriptions()}), 0
        raise BadRequest(f"unknown op {op!r}" + (" (subscriptions live on store 0)" if op else ""))

    def _complete(self, tokens: list[Token], items: list[Republished]) -> tuple[bytes, int]:
        done = [message_id for message_id, token in tokens if self.leases.complete(message_id, token)]
        successors: list[Stored] = []
        for message_id, token, mtype, body in items:
            lease = self.leases.complete(message_id, token)
            if lease is not None:
                done.append(message_id)
                successors.append((self.next_id, lease.interchange_id, mtype, body))
                self.next_id += 1
        if done:
            self.box.delete(done)
        if successors:  # before COMPLETED moves, so the depth (published − completed) never dips
            self._store(successors)
        lost = len(tokens) + len(items) - len(done)
        self.counters[MessageBoxCounter.COMPLETED] += len(done)
        self.counters[MessageBoxCounter.LOST_LEASES] += lost
        return encode({"ok": True, "completed": len(done), "lost": lost}), len(successors)

    def _serve_claims(self, claims: list[Claim], now: float) -> list[tuple[MessageBoxConnection, bytes]]:
        replies = []
        for claim in claims:
            if not claim.connection.open:
                continue
            ids = self.leases.take(claim.limit)
            if not ids and claim.deadline > now:
                self.parked.append(claim)
                continue
            rows: list[Claimed] = []
            for message_id, iid, mtype, body in self.box.read(ids) if ids else ():
                rows.append((message_id, self.leases.grant(message_id, iid, now), iid, mtype, body))
            self.counters[MessageBoxCounter.CLAIMED] += len(rows)
            replies.append((claim.connection, encode({"ok": True, "messages": rows})))
        return replies


def _published(value: Any) -> list[Published]:
    if not isinstance(value, list) or not all(
        isinstance(m, list) and len(m) == 3 and isinstance(m[0], int) for m in value
    ):
        raise BadRequest("publish wants messages: [[interchange_id, type, body], …]")
    return [(m[0], str(m[1]), str(m[2])) for m in value]


def _tokens(value: Any) -> list[Token]:
    if not isinstance(value, list) or not all(isinstance(t, list) and len(t) == 2 for t in value):
        raise BadRequest("complete wants done: [[id, token], …]")
    return [(int(t[0]), int(t[1])) for t in value]


def _republished(value: Any) -> list[Republished]:
    if not isinstance(value, list) or not all(isinstance(r, list) and len(r) == 4 for r in value):
        raise BadRequest("complete wants republish: [[id, token, type, body], …]")
    return [(int(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in value]


async def serve(args: argparse.Namespace) -> None:
    who = f"store {args.index}"
    stop = child.stop_event(args.parent_pid is not None)
    try:
        box = open_messagebox(
            args.index,
            data_dir=Path(args.data_dir),
            store_url=os.environ.get(STORE_URL_ENV),
            master=args.master,
        )
    except (RuntimeError, OSError, sqlite3.Error, psycopg.Error) as e:
        child.fail(who, str(e))
    server = MessageBoxServer(box, args.lease, open_slot(args.counters, args.slot), args.master)
    listener, port = await child.listen(who, lambda: MessageBoxConnection(server), args.port)
    child.announce(f"listening 127.0.0.1:{port}")
    stop_waiter = asyncio.create_task(stop.wait())
    stop_waiter.add_done_callback(lambda _: server.wake.set())
    try:
        await server.run(stop)
    finally:
        listener.close()
        box.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.msgbus.messagebox_server", description=__doc__)
    p.add_argument("--index", type=int, default=0, help="store number; 0 is the master (subscriptions)")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--data-dir", default=".", help="where the SQLite file goes")
    p.add_argument("--master", action="store_true", help="also hold the subscriptions")
    p.add_argument("--lease", type=float, default=5.0, help="seconds a claim holds a message")
    child.add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    child.run_tier(parse_args(argv), serve)


if __name__ == "__main__":
    main()
