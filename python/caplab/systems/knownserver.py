"""A server whose capacity is known in advance, for checking what caplab measures.

Each request can burn a fixed CPU time (capacity ≈ cores / cost), sleep without blocking
(latency without load), or sleep while holding the only thread (a software limit: capacity =
1 / sleep with the CPU idle), or keep some memory for good per request (a leak, or a cache that
grows with the load: under a memory limit the server meets the limit, not its CPU), or hold some
while each request is in flight (memory in proportion to the concurrency, as a server's per-session
buffers are: more users, more memory). It can freeze once, answer with an error status, and
speak HTTP/1.1 or framed TCP (``line``, ``u32``, ``mllp``: the payload is echoed back in the same
framing).

Run: ``python -m caplab.systems.knownserver --protocol http --cpu-us 200``; the first line on
stdout is ``listening HOST:PORT``. ``GET /__stats`` (JSON) and ``GET /metrics`` (Prometheus text)
count the requests served, as an independent check on the generator.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import struct
import time
from dataclasses import dataclass, field

MLLP_START = b"\x0b"
MLLP_END = b"\x1c\x0d"
PAGE = 4096


@dataclass
class Behaviour:
    cpu_us: float = 0.0
    sleep_ms: float = 0.0
    serial_sleep_ms: float = 0.0
    freeze_after: int = 0
    freeze_s: float = 0.0
    status: int = 200
    alloc_kb: int = 0
    alloc_cap_mb: float = 0.0
    hold_kb: int = 0
    requests: int = 0
    frozen: bool = False
    retained: list[bytearray] = field(default_factory=list)
    retained_bytes: int = 0

    async def serve_one(self) -> None:
        """Does the configured work for one request."""
        self.requests += 1
        if self.freeze_after and not self.frozen and self.requests >= self.freeze_after:
            self.frozen = True
            time.sleep(self.freeze_s)  # blocks the loop: every connection stalls
        if self.cpu_us:
            burn_cpu(self.cpu_us / 1e6)
        if self.serial_sleep_ms:
            time.sleep(self.serial_sleep_ms / 1000)
        if self.alloc_kb:
            self.retain(self.alloc_kb * 1024)
        held = touched(self.hold_kb * 1024) if self.hold_kb else None  # memory per request in flight
        if self.sleep_ms:
            await asyncio.sleep(self.sleep_ms / 1000)
        del held

    def retain(self, size: int) -> None:
        """Keeps `size` bytes for good, every page written (a page never touched costs no memory),
        until the cap is reached."""
        if self.alloc_cap_mb and self.retained_bytes + size > self.alloc_cap_mb * 2**20:
            return
        self.retained.append(touched(size))
        self.retained_bytes += size


def touched(size: int) -> bytearray:
    """``size`` bytes with every page written: memory the process really holds (a page never
    touched costs none)."""
    chunk = bytearray(size)
    chunk[::PAGE] = b"\x01" * len(range(0, size, PAGE))
    return chunk


def served_requests(host: str, port: int) -> int:
    """How many requests a running HTTP knownserver has answered (its ``GET /__stats``): an
    independent count to check a generator's figures against."""
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request("GET", "/__stats")
        return int(json.loads(conn.getresponse().read())["requests"])
    finally:
        conn.close()


def burn_cpu(seconds: float) -> None:
    """Spins until this thread has used `seconds` of CPU (not wall) time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def handle_http(b: Behaviour, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length:
            await reader.readexactly(length)
        if head.startswith(b"GET /__stats"):
            body = json.dumps({"requests": b.requests, "retained_bytes": b.retained_bytes}).encode()
        elif head.startswith(b"GET /metrics"):
            body = (  # Prometheus text format, for studies that read a system's own counters
                b"# HELP knownserver_requests_total Requests served (stats and metrics not counted).\n"
                b"# TYPE knownserver_requests_total counter\nknownserver_requests_total %d\n" % b.requests
            )
        else:
            await b.serve_one()
            body = b"ok\n"
        reason = b"OK" if b.status < 400 else b"Error"
        writer.write(
            b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s"
            % (b.status, reason, len(body), body)
        )
        await writer.drain()


async def read_frame(framing: str, reader: asyncio.StreamReader) -> bytes:
    if framing == "line":
        return (await reader.readuntil(b"\n"))[:-1]
    if framing == "u32":
        (length,) = struct.unpack(">I", await reader.readexactly(4))
        return await reader.readexactly(length)
    start = await reader.readexactly(1)
    if start != MLLP_START:
        raise ConnectionError("MLLP frame must start with 0x0B")
    return (await reader.readuntil(MLLP_END))[:-2]


def frame(framing: str, payload: bytes) -> bytes:
    if framing == "line":
        return payload + b"\n"
    if framing == "u32":
        return struct.pack(">I", len(payload)) + payload
    return MLLP_START + payload + MLLP_END


async def handle_framed(
    b: Behaviour, framing: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    while True:
        try:
            payload = await read_frame(framing, reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        await b.serve_one()
        writer.write(frame(framing, payload))
        await writer.drain()


async def serve(args: argparse.Namespace) -> None:
    b = Behaviour(
        cpu_us=args.cpu_us,
        sleep_ms=args.sleep_ms,
        serial_sleep_ms=args.serial_sleep_ms,
        freeze_after=args.freeze_after,
        freeze_s=args.freeze_s,
        status=args.status,
        alloc_kb=args.alloc_kb,
        alloc_cap_mb=args.alloc_cap_mb,
        hold_kb=args.hold_kb,
    )

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if args.protocol == "http":
                await handle_http(b, reader, writer)
            else:
                await handle_framed(b, args.protocol, reader, writer)
        except (asyncio.CancelledError, ConnectionError):
            pass  # shutting down, or the client went away: nothing to report
        finally:
            writer.close()

    server = await asyncio.start_server(
        on_client, args.host, args.port, backlog=4096, reuse_port=args.reuse_port
    )
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening {host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.knownserver", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    p.add_argument("--protocol", choices=["http", "line", "u32", "mllp"], default="http")
    p.add_argument("--cpu-us", type=float, default=0.0, help="CPU time burned per request")
    p.add_argument("--sleep-ms", type=float, default=0.0, help="non-blocking wait per request")
    p.add_argument("--serial-sleep-ms", type=float, default=0.0, help="wait holding the only thread")
    p.add_argument("--freeze-after", type=int, default=0, help="freeze once after this many requests")
    p.add_argument("--freeze-s", type=float, default=1.0, help="how long the one freeze lasts")
    p.add_argument("--status", type=int, default=200, help="HTTP status of every reply")
    p.add_argument("--alloc-kb", type=int, default=0, help="memory kept for good per request (KB)")
    p.add_argument("--hold-kb", type=int, default=0, help="memory held while each request is in flight (KB)")
    p.add_argument("--alloc-cap-mb", type=float, default=0.0, help="keep no more than this (0: no cap)")
    p.add_argument("--reuse-port", action="store_true", help="let several processes share the port")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
