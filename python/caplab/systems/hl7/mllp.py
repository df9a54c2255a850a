"""MLLP, HL7's minimal lower-layer protocol: each message travels as 0x0B, the message, 0x1C 0x0D.

``Frames`` cuts a byte stream into messages (bytes outside a frame are dropped, as MLLP says);
``frame`` wraps one; ``exchange`` is a blocking client for one message and its reply (tests, the
downstream-sink writer).
"""

from __future__ import annotations

import socket

START = b"\x0b"
END = b"\x1c\x0d"
MAX_FRAME = 16 * 1024 * 1024


class FrameTooLarge(ValueError):
    """A frame without its end marker after MAX_FRAME bytes: the peer is not speaking MLLP."""


def frame(message: bytes) -> bytes:
    return START + message + END


class Frames:
    """Feed bytes in, take whole messages out."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        messages = []
        while True:
            start = self.buffer.find(START)
            if start < 0:
                self.buffer.clear()
                break
            end = self.buffer.find(END, start + 1)
            if end < 0:
                del self.buffer[:start]
                if len(self.buffer) > MAX_FRAME:
                    raise FrameTooLarge(f"no end of frame within {MAX_FRAME} bytes")
                break
            messages.append(bytes(self.buffer[start + 1 : end]))
            del self.buffer[: end + len(END)]
        return messages


class Connection:
    """A blocking MLLP client connection: ``send`` one message, get its reply."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.frames = Frames()
        self.replies: list[bytes] = []

    def send(self, message: bytes) -> bytes:
        self.sock.sendall(frame(message))
        while not self.replies:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the peer closed the connection before it replied")
            self.replies += self.frames.feed(data)
        return self.replies.pop(0)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
