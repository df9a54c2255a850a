"""Receive: the receive location. Accepts XML documents over framed TCP (the NetTcp adapter) and
HTTP POST, publishes them to the MessageBoxes and acknowledges each one only once it is durable.

TCP: each u32 frame is one document; the reply is one u32 frame, in order: ``OK <interchange id>``
or ``ERR <reason>`` (not well-formed XML, not UTF-8, no subscriber, the store failed).
HTTP/1.1 (keep-alive): ``POST /messages`` (or ``/``) with the document as body → ``202 Accepted``
with ``{"id": <interchange id>}``; ``400`` for a body that is not a well-formed UTF-8 document,
``422`` for a document nobody subscribes to, ``503`` when the store failed; ``GET /health`` → 200.

The interchange id is assigned here (1, 2, 3, … per run) and stays with the document to the sink,
through orchestrations too: it is the id a client keeps. Document *n* goes to store ``n mod M``.
Publishes to one store are group-committed: while one publish request is in flight, documents that
arrive wait for the next, which carries all of them (up to MAX_BATCH). At most MAX_IN_FLIGHT
documents are between arrival and acknowledgement; beyond that receive stops reading its
connections until acknowledgements catch up (back-pressure, not an unbounded queue).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable

from caplab.systems.counterfile import open_slot
from caplab.systems.msgbus import child
from caplab.systems.msgbus.counters import ReceiveCounter
from caplab.systems.msgbus.documents import NotAMessage, read_document
from caplab.systems.msgbus.protocol import (
    MAX_FRAME,
    FrameBuffer,
    FrameTooLarge,
    MessageBoxClient,
    MessageBoxError,
    Published,
    frame,
)

MAX_BATCH = 256
MAX_IN_FLIGHT = 4096
LINGER_S = 0.002
"""Under load (a publish follows another), wait this long before sending the next batch: a few
documents more per commit for 2 ms of latency. An idle publisher sends at once."""
MAX_HEAD = 64 * 1024
PAUSE_ABOVE = 256 * 1024
"""Bytes a connection may have buffered beyond the request being published before we stop reading
it (only a client that pipelines gets there)."""

Done = Callable[[int, str | None], None]
"""Called with (interchange id, None) once durable, or (id, reason) when the publish failed."""


class Rejected(ValueError):
    """A document receive refuses before publishing it; ``status`` is the HTTP answer."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


class Publisher:
    """Group commit toward one store: one publish request in flight, the next one fills meanwhile."""

    def __init__(self, store: MessageBoxClient, receive: Receive) -> None:
        self.store = store
        self.receive = receive
        self.messages: list[Published] = []
        self.waiters: list[Done] = []
        self.task: asyncio.Task[None] | None = None

    def add(self, message: Published, done: Done) -> None:
        self.messages.append(message)
        self.waiters.append(done)
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            busy = False
            while self.messages:
                if busy and len(self.messages) < MAX_BATCH:
                    await asyncio.sleep(LINGER_S)  # under load: let the next batch fill a little
                busy = True
                batch, self.messages = self.messages[:MAX_BATCH], self.messages[MAX_BATCH:]
                waiters, self.waiters = self.waiters[:MAX_BATCH], self.waiters[MAX_BATCH:]
                error = None
                try:
                    await self.store.call({"op": "publish", "messages": batch})
                except MessageBoxError as e:
                    error = str(e)
                self.receive.published(len(batch), error)
                for message, done in zip(batch, waiters, strict=True):
                    done(message[0], error)
        finally:
            self.task = None


class Receive:
    """Checks, numbers and routes documents to their store's publisher; owns back-pressure."""

    def __init__(
        self, stores: list[MessageBoxClient], subscribed: frozenset[str], counters: memoryview
    ) -> None:
        self.publishers = [Publisher(store, self) for store in stores]
        self.subscribed = subscribed
        self.counters = counters
        self.next_id = 1
        self.in_flight = 0
        self.blocked: list[Connection] = []

    def submit(self, body: bytes, done: Done) -> None:
        """Queues the document for publishing, or raises Rejected (nothing is published)."""
        try:
            document = read_document(body)
        except NotAMessage as e:
            self.counters[ReceiveCounter.REJECTED] += 1
            raise Rejected(str(e), 400) from None
        if document.message_type not in self.subscribed:
            self.counters[ReceiveCounter.REJECTED] += 1
            raise Rejected(f"no subscription for message type {document.message_type!r}", 422)
        interchange_id = self.next_id
        self.next_id += 1
        self.in_flight += 1
        publisher = self.publishers[interchange_id % len(self.publishers)]
        publisher.add((interchange_id, document.message_type, document.text), done)

    def published(self, count: int, error: str | None) -> None:
        self.in_flight -= count
        self.counters[ReceiveCounter.BATCHES] += 1
        self.counters[ReceiveCounter.PUBLISH_FAILED if error else ReceiveCounter.RECEIVED] += count
        if self.blocked and self.in_flight < MAX_IN_FLIGHT // 2:
            blocked, self.blocked = self.blocked, []
            for connection in blocked:
                connection.resume()

    @property
    def saturated(self) -> bool:
        return self.in_flight >= MAX_IN_FLIGHT

    def block(self, connection: Connection) -> None:
        connection.pause()
        self.blocked.append(connection)


class Connection(asyncio.Protocol):
    """One client connection: requests are answered one at a time, in order."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.transport: asyncio.Transport | None = None
        self.waiting = False  # a document of ours is being published
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def pause(self) -> None:
        if self.transport is not None and not self.paused:
            self.transport.pause_reading()
            self.paused = True

    def resume(self) -> None:
        if self.transport is not None and self.paused:
            self.transport.resume_reading()
            self.paused = False
        self.serve()

    def serve(self) -> None:
        """Handles buffered requests until one is being published or none is complete."""
        while not self.waiting and self.transport is not None:
            if self.receive.saturated:
                self.receive.block(self)
                return
            if not self.next_request():
                return

    def next_request(self) -> bool:
        raise NotImplementedError

    def write(self, data: bytes, close: bool = False) -> None:
        if self.transport is not None:
            self.transport.write(data)
            if close:
                self.transport.close()
                self.transport = None


class FramedConnection(Connection):
    def __init__(self, receive: Receive) -> None:
        super().__init__(receive)
        self.frames = FrameBuffer()

    def data_received(self, data: bytes) -> None:
        self.frames.feed(data)
        self.serve()
        if self.waiting and self.frames.buffered() > PAUSE_ABOVE:
            self.pause()

    def next_request(self) -> bool:
        try:
            body = self.frames.next_frame()
        except FrameTooLarge as e:
            self.write(frame(f"ERR {e}".encode()), close=True)
            return False
        if body is None:
            return False
        try:
            self.receive.submit(body, self.acknowledge)
            self.waiting = True
        except Rejected as e:
            self.write(frame(f"ERR {e}".encode()))
        return True

    def acknowledge(self, interchange_id: int, error: str | None) -> None:
        self.waiting = False
        self.write(frame(f"ERR {error}".encode() if error else b"OK %d" % interchange_id))
        self.resume()


class HttpConnection(Connection):
    def __init__(self, receive: Receive) -> None:
        super().__init__(receive)
        self.buffer = bytearray()
        self.close_after = False
        self.continued = False  # "100 Continue" sent for the request being read

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.serve()
        if self.waiting and len(self.buffer) > PAUSE_ABOVE:
            self.pause()

    def next_request(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                self.respond(431, "request head too large\n", close=True)
            return False
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        method, target, version = [*head[0].split(" "), "", "", ""][:3]
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.respond(411, "send the document with a Content-Length\n", close=True)
            return False
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FRAME:
            self.respond(413 if length > 0 else 400, "bad Content-Length\n", close=True)
            return False
        if len(self.buffer) < end + 4 + length:
            if headers.get("expect", "").lower() == "100-continue" and not self.continued:
                self.continued = True
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        self.continued = False
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        connection = headers.get("connection", "").lower()
        self.close_after = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        self.route(method, target.split("?", 1)[0], body)
        return True

    def route(self, method: str, path: str, body: bytes) -> None:
        if path not in ("/", "/messages", "/health"):
            self.respond(404, "not found: POST /messages\n")
        elif path == "/health":
            self.respond(200, "ok\n")
        elif method != "POST":
            self.respond(405, "POST the document to /messages\n")
        else:
            try:
                self.receive.submit(body, self.acknowledge)
                self.waiting = True
            except Rejected as e:
                self.respond(e.status, f"{e}\n")

    def acknowledge(self, interchange_id: int, error: str | None) -> None:
        self.waiting = False
        if error:
            self.respond(503, f"not published: {error}\n")
        else:
            self.respond(202, json.dumps({"id": interchange_id}) + "\n", "application/json")
        self.resume()

    def respond(self, status: int, body: str, content_type: str = "text/plain", close: bool = False) -> None:
        close = close or self.close_after
        payload = body.encode()
        extra = "Connection: close\r\n" if close else ""
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(payload)}\r\n{extra}\r\n"
        )
        self.write(head.encode() + payload, close=close)


REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Content Too Large",
    422: "Unprocessable Content",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


async def serve(args: argparse.Namespace) -> None:
    stop = child.stop_event(args.parent_pid is not None)
    try:
        stores = [await MessageBoxClient.connect(address) for address in args.stores.split(",")]
        reply = await stores[0].call({"op": "subscriptions"})
    except MessageBoxError as e:
        child.fail("receive", str(e))
    receive = Receive(
        stores, frozenset(row[0] for row in reply["subscriptions"]), open_slot(args.counters, args.slot)
    )
    tcp, tcp_port = await child.listen("receive", lambda: FramedConnection(receive), args.port)
    http, http_port = await child.listen("receive", lambda: HttpConnection(receive), args.http_port)
    child.announce(f"listening 127.0.0.1:{tcp_port}", f"http 127.0.0.1:{http_port}")
    await stop.wait()
    tcp.close()
    http.close()
    for store in stores:
        store.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.msgbus.receive", description=__doc__)
    p.add_argument("--port", type=int, default=0, help="framed TCP (u32) port")
    p.add_argument("--http-port", type=int, default=0)
    p.add_argument("--stores", required=True, help="store servers, HOST:PORT,… (the first is the master)")
    child.add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    child.run_tier(parse_args(argv), serve)


if __name__ == "__main__":
    main()
