"""Servers started inside the test process on 127.0.0.1, for tests that must see what arrived on
the wire: a framed TCP echo server and an HTTP server that records requests."""

from __future__ import annotations

import contextlib
import selectors
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from caplab.systems import knownserver
from caplab.systems.process import RunningServer

Framing = Literal["line", "u32", "mllp"]
KnownServer = Callable[..., RunningServer]
"""Starts knownserver with extra arguments (the `known_server` fixture)."""
Reply = Literal["echo", "never", "close"]

# Linux (asm-generic): ask the kernel to stamp each received segment; the stamp travels with
# recvmsg as SCM_TIMESTAMPNS (same number). Python's socket module does not name it.
SO_TIMESTAMPNS = 35
TIMESPEC = struct.Struct("@qq")

MLLP_START = 0x0B
MLLP_END = b"\x1c\r"


def served_requests(server: RunningServer) -> int:
    """How many requests an HTTP knownserver has served (its ``/__stats`` endpoint)."""
    return knownserver.served_requests(server.host, server.port)


def arrival_ns(ancillary: list[tuple[int, int, bytes]]) -> int:
    """When the data arrived: the kernel's receive stamp (CLOCK_REALTIME) when present, so that
    scheduling delays of this Python thread do not blur arrival times; else the time of reading."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            seconds, nanos = TIMESPEC.unpack_from(data)
            return int(seconds) * 1_000_000_000 + int(nanos)
    return time.time_ns()


def split_frames(framing: Framing, buf: bytearray) -> list[bytes]:
    """Removes every complete frame from `buf` and returns their payloads; raises on a bad frame."""
    out: list[bytes] = []
    while buf:
        if framing == "line":
            end = buf.find(b"\n")
            if end < 0:
                break
            out.append(bytes(buf[:end]))
            del buf[: end + 1]
        elif framing == "u32":
            if len(buf) < 4:
                break
            (length,) = struct.unpack(">I", buf[:4])
            if len(buf) < 4 + length:
                break
            out.append(bytes(buf[4 : 4 + length]))
            del buf[: 4 + length]
        else:
            if buf[0] != MLLP_START:
                raise ValueError(f"MLLP frame starts with {buf[0]:#x}, not 0x0b")
            end = buf.find(MLLP_END)
            if end < 0:
                break
            out.append(bytes(buf[1:end]))
            del buf[: end + len(MLLP_END)]
    return out


def frame(framing: Framing, payload: bytes) -> bytes:
    if framing == "line":
        return payload + b"\n"
    if framing == "u32":
        return struct.pack(">I", len(payload)) + payload
    return bytes([MLLP_START]) + payload + MLLP_END


@dataclass(frozen=True)
class Received:
    """One request frame as the server saw it: when it arrived (ns, see `arrival_ns`) and its payload."""

    at_ns: int
    payload: bytes


class FramedServer:
    """A one-thread selector server on 127.0.0.1 that parses `framing` strictly, records each frame
    with its arrival time, and echoes it back in the same framing (or never replies, or closes)."""

    def __init__(self, framing: Framing, reply: Reply = "echo") -> None:
        self.framing: Framing = framing
        self.reply = reply
        self.problems: list[str] = []
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name=f"framed-{framing}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def count(self) -> int:
        with self._lock:
            return len(self._received)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        buffers: dict[socket.socket, bytearray] = {}
        while not self._stop.is_set():
            for key, _ in sel.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept(sel, buffers)
                else:
                    self._read(sock, sel, buffers)
        for conn in list(buffers):
            conn.close()
        sel.close()

    def _accept(self, sel: selectors.BaseSelector, buffers: dict[socket.socket, bytearray]) -> None:
        """A new connection, asking the kernel for each packet's arrival time."""
        try:
            conn, _ = self._listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(True)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sel.register(conn, selectors.EVENT_READ)
        buffers[conn] = bytearray()

    def _read(
        self, sock: socket.socket, sel: selectors.BaseSelector, buffers: dict[socket.socket, bytearray]
    ) -> None:
        """What arrived on a connection: its whole frames recorded, then answered as ``reply`` says;
        a closed connection or a malformed frame drops it."""

        def drop() -> None:
            sel.unregister(sock)
            buffers.pop(sock, None)
            sock.close()

        try:
            data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(TIMESPEC.size))
        except OSError:
            data, ancillary = b"", []
        at = arrival_ns(ancillary)
        if not data:
            drop()
            return
        buf = buffers[sock]
        buf += data
        try:
            payloads = split_frames(self.framing, buf)
        except ValueError as e:
            self.problems.append(str(e))
            drop()
            return
        with self._lock:
            self._received.extend(Received(at, p) for p in payloads)
        if payloads and self.reply == "close":
            drop()
        elif self.reply == "echo":
            try:
                sock.sendall(b"".join(frame(self.framing, p) for p in payloads))
            except OSError:
                drop()


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


ResponseStyle = Literal["length", "chunked", "close", "http10"]

RESPONSES: dict[ResponseStyle, bytes] = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n2;x=y\r\nab\r\n0\r\n\r\n",
    "close": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nok\n",
}


class RecordingHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, style: ResponseStyle) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.style: ResponseStyle = style
        self.requests: list[HttpRequest] = []
        self.connections = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _RecordingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RecordingHttpServer

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.requests.append(
                HttpRequest(self.command, self.path, dict(self.headers.items()), body)
            )
        style = self.server.style
        self.wfile.write(RESPONSES[style])
        self.wfile.flush()
        if style in ("close", "http10"):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:
        pass


def default_sigint() -> None:
    """``preexec_fn`` for a child that must take Ctrl-C as a terminal delivers it: a shell that runs
    the tests in the background sets SIGINT to ignored, children inherit that, and Python then
    never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
