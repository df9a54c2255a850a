"""The wire formats msgbus speaks between its tiers, all over loopback TCP.

Every connection carries u32 big-endian length-prefixed frames (the NetTcp adapter's framing in
the paper). Receive and sink speak it to clients and hosts; the store servers speak it too, with
one JSON object per frame: a request ``{"op": …}`` and exactly one reply ``{"ok": true, …}`` or
``{"ok": false, "error": …}``, in order.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any, Self

HEADER = struct.Struct(">I")
MAX_FRAME = 4 * 1024 * 1024
"""Largest frame any tier accepts: a bigger length prefix is a protocol error, not a reason to
buffer gigabytes."""

JsonObject = dict[str, Any]

# Shapes of the store protocol's lists (JSON arrays on the wire).
Published = tuple[int, str, str]
"""(interchange id, message type, body): one document receive publishes."""
Claimed = tuple[int, int, int, str, str]
"""(message id, token, interchange id, message type, body): one message leased to a host."""
Token = tuple[int, int]
"""(message id, token): completes one claim."""
Republished = tuple[int, int, str, str]
"""(message id, token, message type, body): completes one claim and, in the same transaction,
publishes its successor under the same interchange id (an orchestration's output)."""


class FrameTooLarge(ValueError):
    """A length prefix above MAX_FRAME: the peer is not speaking msgbus's framing."""


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


class FrameBuffer:
    """Splits a byte stream (as ``data_received`` delivers it) into frames.

    Frames are cut lazily with an offset so a burst of small frames costs one buffer compaction,
    not one copy per frame."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._limit = limit

    def feed(self, data: bytes) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None until more bytes arrive."""
        pos = self._pos
        if len(self._buf) - pos < 4:
            return None
        (length,) = HEADER.unpack_from(self._buf, pos)
        if length > self._limit:
            raise FrameTooLarge(f"frame of {length} bytes exceeds the limit of {self._limit}")
        end = pos + 4 + length
        if len(self._buf) < end:
            return None
        self._pos = end
        return bytes(self._buf[pos + 4 : end])


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (length,) = HEADER.unpack(await reader.readexactly(4))
    if length > MAX_FRAME:
        raise FrameTooLarge(f"frame of {length} bytes exceeds the limit of {MAX_FRAME}")
    return await reader.readexactly(length)


def encode(obj: JsonObject) -> bytes:
    return frame(json.dumps(obj, separators=(",", ":")).encode())


def decode(payload: bytes) -> JsonObject:
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


class MessageBoxError(RuntimeError):
    """A store server answered ``ok: false`` or went away."""


class TierConnection:
    """A client's connection to another tier's process at ``HOST:PORT``; subclasses name the tier
    and the error a failure raises, so callers catch one error per tier."""

    tier = "server"
    failure: type[RuntimeError] = RuntimeError

    def __init__(self, address: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(cls, address: str) -> Self:
        host, _, port = address.rpartition(":")
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
        except OSError as e:
            raise cls.failure(f"cannot connect to the {cls.tier} at {address}: {e.strerror or e}") from e
        return cls(address, reader, writer)


class MessageBoxClient(TierConnection):
    """One connection to a store server; one request in flight at a time (callers serialise)."""

    tier = "store"
    failure = MessageBoxError

    async def call(self, request: JsonObject) -> JsonObject:
        try:
            self._writer.write(encode(request))
            reply = decode(await read_frame(self._reader))
        except (OSError, asyncio.IncompleteReadError) as e:
            raise MessageBoxError(f"lost the connection to the store at {self.address}") from e
        if not reply.get("ok"):
            raise MessageBoxError(f"store at {self.address}: {reply.get('error', 'unknown error')}")
        return reply

    def close(self) -> None:
        self._writer.close()
