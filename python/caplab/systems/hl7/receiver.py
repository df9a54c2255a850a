"""The receiver: every channel's inbound MLLP listener (and file-drop reader) in one process, and
the group commit.

``python -m caplab.systems.hl7.receiver --ports P0,P1,…`` (the supervisor starts it; the database
URL comes in ``CAPLAB_HL7_DB``). Each frame's header is read (message.py); a message goes to the
committer thread, which inserts everything that arrived meanwhile — every channel's — in one
transaction, and only when that commit has returned is each message acknowledged: AA (new, or a
control id the channel already queued) or AE (malformed; kept in the rejected table). If the
database fails the commit, the messages are answered AR and not counted: the sender should send
them again.

One process, because the receive path is cheap next to the transform (a header split and a row)
and a single committer makes the groups as large as possible: with SQLite only one writer commits
at a time anyway. The CPU-heavy transforms run in one worker process per channel (worker.py).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.child import bind_to_parent
from caplab.systems.hl7 import mllp
from caplab.systems.hl7.child import add_common_args, fail, log
from caplab.systems.hl7.counters import Counters, Field
from caplab.systems.hl7.message import Header, Malformed, ack, ack_code, decode, read_header
from caplab.systems.hl7.queue import URL_ENV, Incoming, Queue, QueueUnavailable, Rejected, open_queue

MAX_BATCH = 1000
MAX_UNANSWERED = 256
"""Frames a connection may have waiting for their commit before the receiver stops reading it."""


@dataclass(slots=True)
class Pending:
    header: Header | None
    item: Incoming | Rejected
    reply: asyncio.Future[bytes]


def pending(channel: int, raw: bytes, reply: asyncio.Future[bytes], key_suffix: str = "") -> Pending:
    """A received message on its way to the committer: to queue, or (malformed) to reject.
    ``key_suffix`` follows the control id in the queue's key (``--repeats queue``)."""
    now = time.time()
    text = decode(raw)
    try:
        if "\x00" in text:
            raise Malformed("contains a NUL byte")
        header = read_header(text)
    except Malformed as e:
        return Pending(None, Rejected(channel, now, str(e), raw), reply)
    key = header.control_id + key_suffix
    item = Incoming(channel, key, header.message_type, header.patient_id, now, text)
    return Pending(header, item, reply)


class Committer:
    """A thread that commits whatever is pending as one group and then answers all of it.

    After a failed commit it commits nothing more (a database connection in an unknown state is
    not trusted): everything still pending is answered AR, and ``on_failure`` runs on the event
    loop, which stops the receiver with exit 1 so the supervisor starts a fresh one."""

    def __init__(
        self,
        q: Queue,
        counters: Counters | None,
        loop: asyncio.AbstractEventLoop,
        on_failure: Callable[[], None],
    ) -> None:
        self.queue = q
        self.counters = counters
        self.loop = loop
        self.on_failure = on_failure
        self.failed = False
        self.inbox: queue.SimpleQueue[Pending | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="committer", daemon=True)

    def _run(self) -> None:
        while True:
            first = self.inbox.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    more = self.inbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self.inbox.put(None)
                    break
                batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[Pending]) -> None:
        messages = [(p, p.item) for p in batch if isinstance(p.item, Incoming)]
        rejects = [(p, p.item) for p in batch if isinstance(p.item, Rejected)]
        refused = [(p.reply, ack(p.header, "AR", "not queued: database error; send again")) for p in batch]
        if self.failed:
            self.loop.call_soon_threadsafe(_answer, refused)
            return
        try:
            new = self.queue.enqueue([m for _, m in messages], [r for _, r in rejects])
        except Exception as e:  # the database failed: nothing of the group is acknowledged
            log("receiver", f"commit of {len(batch)} messages failed: {e}; restarting")
            self.failed = True
            self.loop.call_soon_threadsafe(_answer, refused)
            self.loop.call_soon_threadsafe(self.on_failure)
            return
        answers = []
        for (p, m), is_new in zip(messages, new, strict=True):
            self._count(m.channel, Field.QUEUED if is_new else Field.DUPLICATES)
            answers.append((p.reply, ack(p.header, "AA")))
        for p, r in rejects:
            self._count(r.channel, Field.REJECTED)
            answers.append((p.reply, ack(p.header, "AE", r.reason)))
        self.loop.call_soon_threadsafe(_answer, answers)

    def _count(self, channel: int, field: Field) -> None:
        if self.counters is not None:
            self.counters.slot(channel)[field] += 1


def _answer(answers: list[tuple[asyncio.Future[bytes], bytes]]) -> None:
    for future, reply in answers:
        if not future.done():
            future.set_result(reply)


class MllpChannel(asyncio.Protocol):
    """One connection to a channel's listener; replies go back in the order the frames came."""

    serial = 0
    """Connections accepted by this process, for ``key_suffix``."""

    def __init__(
        self, channel: int, committer: Committer, counters: Counters | None, repeats_token: str | None = None
    ) -> None:
        self.channel = channel
        MllpChannel.serial += 1
        # --repeats queue: a control id is unique within one connection only, so a load generator
        # that numbers its messages from 0 on every run queues each run's messages anew.
        self.key_suffix = f"~{repeats_token}.{MllpChannel.serial}" if repeats_token is not None else ""
        self.committer = committer
        self.slot = counters.slot(channel) if counters is not None else None
        self.frames = mllp.Frames()
        self.unanswered: collections.deque[asyncio.Future[bytes]] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.frames.feed(data)
        except mllp.FrameTooLarge as e:
            log("receiver", f"channel {self.channel}: {e}; closing the connection")
            if self.transport is not None:
                self.transport.close()
            return
        loop = asyncio.get_running_loop()
        for raw in frames:
            if self.slot is not None:
                self.slot[Field.RECEIVED] += 1
            reply: asyncio.Future[bytes] = loop.create_future()
            reply.add_done_callback(self._flush)
            self.unanswered.append(reply)
            self.committer.inbox.put(pending(self.channel, raw, reply, self.key_suffix))
        if len(self.unanswered) > MAX_UNANSWERED and self.transport is not None and not self.paused:
            self.transport.pause_reading()
            self.paused = True

    def _flush(self, _: asyncio.Future[bytes]) -> None:
        while self.unanswered and self.unanswered[0].done():
            reply = self.unanswered.popleft().result()
            if self.transport is not None:
                self.transport.write(mllp.frame(reply))
        if self.paused and len(self.unanswered) <= MAX_UNANSWERED // 2 and self.transport is not None:
            self.transport.resume_reading()
            self.paused = False


class DropReader:
    """A channel's file-drop reader (the paper's channels read files): every ``*.hl7`` file in its
    directory is one message, taken in name order; the file is deleted once the message's commit
    has returned (queued, duplicate or rejected), so a crash in between only reads it again, and a
    message the database failed to take stays for the next look. Files are to be dropped whole
    (written elsewhere, or under a name starting with a dot, then renamed)."""

    POLL_S = 0.05

    def __init__(
        self, channel: int, directory: Path, committer: Committer, counters: Counters | None
    ) -> None:
        self.channel = channel
        self.directory = directory
        self.committer = committer
        self.slot = counters.slot(channel) if counters is not None else None
        directory.mkdir(parents=True, exist_ok=True)

    def _look(self) -> list[tuple[Path, bytes]]:
        names = sorted(p for p in self.directory.glob("*.hl7") if not p.name.startswith("."))
        dropped = []
        for p in names[:MAX_BATCH]:
            with contextlib.suppress(FileNotFoundError):  # taken away meanwhile
                dropped.append((p, p.read_bytes()))
        return dropped

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            dropped = await asyncio.to_thread(self._look)
            if not dropped:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.POLL_S)
                continue
            replies = []
            for path, raw in dropped:
                if self.slot is not None:
                    self.slot[Field.RECEIVED] += 1
                reply: asyncio.Future[bytes] = loop.create_future()
                self.committer.inbox.put(pending(self.channel, raw, reply))
                replies.append((path, reply))
            for path, reply in replies:
                if ack_code(await reply) in ("AA", "AE"):
                    path.unlink(missing_ok=True)


async def serve(
    ports: list[int],
    q: Queue,
    counters: Counters | None,
    supervised: bool,
    drop_dir: Path | None = None,
    repeats_token: str | None = None,
) -> bool:
    """Until SIGTERM (True) or a failed commit (False)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    committer = Committer(q, counters, loop, stop.set)
    committer.thread.start()
    readers = []
    if drop_dir is not None:
        for channel in range(len(ports)):
            reader = DropReader(channel, drop_dir / f"channel-{channel}", committer, counters)
            readers.append(asyncio.create_task(reader.run(stop)))
    servers = []
    for channel, port in enumerate(ports):
        server = await _listen(
            loop, functools.partial(MllpChannel, channel, committer, counters, repeats_token), port
        )
        servers.append(server)
    bound = [s.sockets[0].getsockname()[1] for s in servers]
    print(f"listening 127.0.0.1:{bound[0]}", flush=True)
    print("channels " + ",".join(f"127.0.0.1:{p}" for p in bound), flush=True)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if not supervised:
        loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    for server in servers:
        server.close()
    await asyncio.gather(*readers)
    committer.inbox.put(None)
    await asyncio.to_thread(committer.thread.join)
    return not committer.failed


async def _listen(
    loop: asyncio.AbstractEventLoop, factory: Callable[[], asyncio.Protocol], port: int
) -> asyncio.Server:
    try:
        return await loop.create_server(factory, "127.0.0.1", port, backlog=4096)
    except OSError as e:
        fail("receiver", f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.hl7.receiver")
    p.add_argument("--ports", required=True, help="one port per channel, comma-separated (0: any free one)")
    p.add_argument("--drop-dir", type=Path, default=None, help="also read DIR/channel-N/*.hl7 files")
    p.add_argument(
        "--repeats",
        choices=("ack", "queue"),
        default="ack",
        help="a control id seen before: acknowledged and not queued again (ack), or queued when it "
        "came on another connection (queue)",
    )
    add_common_args(p)
    a = p.parse_args(argv)
    bind_to_parent(a.parent_pid)
    url = os.environ.get(URL_ENV)
    if not url:
        fail("receiver", f"no database: set {URL_ENV}")
    try:
        q = open_queue(url)
    except QueueUnavailable as e:
        fail("receiver", str(e))
    counters = Counters(Path(a.counters)) if a.counters else None
    ports = [int(x) for x in a.ports.split(",")]
    # Connections of a restarted receiver must not reuse its predecessor's suffixes.
    token = f"{os.getpid():x}{time.time_ns() // 1_000_000 % 0xFFFFFF:x}" if a.repeats == "queue" else None
    supervised = a.parent_pid is not None
    clean = asyncio.run(serve(ports, q, counters, supervised, drop_dir=a.drop_dir, repeats_token=token))
    q.close()
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
