"""Sink: the back-end service the send port delivers to (the paper's WCF service).

Each u32 frame is one delivery: the interchange id, a newline, the outbound document. Every delivery
is acknowledged (``OK`` or ``OK duplicate``), but only the first delivery of an interchange id is
counted as processed: a redelivery after a host died is recognised and not counted twice. The ids
seen are a bitmap (receive numbers documents 1, 2, 3, …), an eighth of a byte per document.

``--log FILE`` appends each newly delivered interchange id on a line of its own, written before the
processed counter moves, so a test that saw the counter reach N can read N ids from the file.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from caplab.systems.counterfile import open_slot
from caplab.systems.msgbus import child
from caplab.systems.msgbus.counters import SinkCounter
from caplab.systems.msgbus.protocol import FrameBuffer, FrameTooLarge, frame

MAX_ID = 1 << 36
"""Largest interchange id the bitmap takes (8 GiB of documents' worth of bits: never reached)."""
OK = frame(b"OK")
DUPLICATE = frame(b"OK duplicate")


class Sink:
    def __init__(self, log_fd: int | None, counters: memoryview) -> None:
        self.seen = bytearray(1 << 16)
        self.log_fd = log_fd
        self.counters = counters

    def first_delivery(self, interchange_id: int) -> bool:
        """Marks the id delivered; True if it had not been before."""
        if not 0 < interchange_id < MAX_ID:
            raise ValueError(f"interchange id {interchange_id} out of range")
        byte, bit = interchange_id >> 3, 1 << (interchange_id & 7)
        if byte >= len(self.seen):
            self.seen.extend(bytes(max(len(self.seen), byte + 1 - len(self.seen))))
        if self.seen[byte] & bit:
            return False
        self.seen[byte] |= bit
        return True

    def record(self, new_ids: list[int], deliveries: int) -> None:
        if new_ids and self.log_fd is not None:
            os.write(self.log_fd, "".join(f"{i}\n" for i in new_ids).encode())
        self.counters[SinkCounter.PROCESSED] += len(new_ids)
        self.counters[SinkCounter.DELIVERIES] += deliveries
        self.counters[SinkCounter.DUPLICATES] += deliveries - len(new_ids)


class SinkConnection(asyncio.Protocol):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.frames = FrameBuffer()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.frames.feed(data)
        replies: list[bytes] = []
        new_ids: list[int] = []
        duplicates, broken = 0, False
        try:
            while (payload := self.frames.next_frame()) is not None:
                try:
                    interchange_id = int(payload[: payload.index(b"\n")])
                    first = self.sink.first_delivery(interchange_id)
                except ValueError as e:
                    replies.append(frame(f"ERR bad delivery: {e}".encode()))
                    continue
                if first:
                    new_ids.append(interchange_id)
                    replies.append(OK)
                else:
                    duplicates += 1
                    replies.append(DUPLICATE)
        except FrameTooLarge as e:
            replies.append(frame(f"ERR {e}".encode()))
            broken = True
        self.sink.record(new_ids, len(new_ids) + duplicates)
        if self.transport is not None and replies:
            self.transport.write(b"".join(replies))
            if broken:
                self.transport.close()


async def serve(args: argparse.Namespace) -> None:
    stop = child.stop_event(args.parent_pid is not None)
    log_fd = None
    if args.log:
        try:
            log_fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as e:
            child.fail("sink", f"cannot open the sink log {args.log}: {e.strerror}")
    sink = Sink(log_fd, open_slot(args.counters, args.slot))
    listener, port = await child.listen("sink", lambda: SinkConnection(sink), args.port)
    child.announce(f"listening 127.0.0.1:{port}")
    await stop.wait()
    listener.close()
    if log_fd is not None:
        os.close(log_fd)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.msgbus.sink", description=__doc__)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log", default=None, help="append each newly delivered interchange id here")
    child.add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    child.run_tier(parse_args(argv), serve)


if __name__ == "__main__":
    main()
