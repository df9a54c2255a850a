"""Plain-socket clients for msgbus in tests: send documents over framed TCP or HTTP from a few
concurrent connections and collect the interchange ids acknowledged; a strict reader of the
Prometheus text format; the sink log."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from caplab.systems.msgbus import RunningMsgbus

Start = Callable[..., RunningMsgbus]
"""``start(hosts, stores, **options)``: the ``start_msgbus`` fixture."""
HEADER = struct.Struct(">I")


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def read_frame(sock: socket.socket) -> bytes:
    return _read_exactly(sock, HEADER.unpack(_read_exactly(sock, 4))[0])


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def tcp_exchange(port: int, payload: bytes) -> bytes:
    """One framed request on a fresh connection; the reply frame."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(frame(payload))
        return read_frame(sock)


def send_tcp(sock: socket.socket, body: bytes) -> int:
    """Sends one document and returns the interchange id of its ``OK <id>`` acknowledgement."""
    sock.sendall(frame(body))
    reply = read_frame(sock)
    if not reply.startswith(b"OK "):
        raise AssertionError(f"not acknowledged: {reply!r}")
    return int(reply[3:])


def send_http(conn: http.client.HTTPConnection, body: bytes) -> int:
    conn.request("POST", "/messages", body=body, headers={"Content-Type": "application/xml"})
    reply = conn.getresponse()
    text = reply.read()
    if reply.status != 202:
        raise AssertionError(f"not acknowledged: {reply.status} {text!r}")
    ident: int = json.loads(text)["id"]
    return ident


@contextlib.contextmanager
def _connection(transport: str, port: int) -> Iterator[Callable[[bytes], int]]:
    """One keep-alive connection over ``transport`` (``tcp``, else HTTP), as a function that sends
    one document and returns its interchange id."""
    if transport == "tcp":
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            yield lambda body: send_tcp(sock, body)
        return
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        yield lambda body: send_http(conn, body)
    finally:
        conn.close()


def send_concurrently(
    transport: str,
    port: int,
    bodies: Sequence[bytes],
    connections: int,
    between: Callable[[int], None] | None = None,
) -> list[int]:
    """Sends ``bodies`` over ``connections`` concurrent keep-alive connections (one request in
    flight on each, as caplab's engine does); returns every acknowledged interchange id.
    ``between(n)`` runs on connection 0's thread after its n-th document (to act mid-run)."""
    acked: list[list[int]] = [[] for _ in range(connections)]
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            with _connection(transport, port) as send:
                for n, body in enumerate(bodies[k::connections]):
                    acked[k].append(send(body))
                    if between is not None and k == 0:
                        between(n + 1)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return [i for ids in acked for i in ids]


def documents(template: str, n: int) -> list[bytes]:
    return [template.replace("{seq}", str(i)).encode() for i in range(n)]


def sink_log(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().splitlines()] if path.exists() else []


SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r'(?P<labels>\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*")*\})?'
    r" (?P<value>[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|[-+]?Inf))$"
)
TYPE = re.compile(
    r"^# TYPE (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (?P<kind>counter|gauge|histogram|summary|untyped)$"
)


def parse_exposition(text: str) -> tuple[dict[str, str], dict[str, float]]:
    """Parses Prometheus text format strictly: (family → type, ``name{labels}`` → value). Every
    sample must follow a ``# TYPE`` line for its family; any malformed line raises."""
    types: dict[str, str] = {}
    samples: dict[str, float] = {}
    current = None
    assert text.endswith("\n"), "the exposition must end with a newline"
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("#"):
            m = TYPE.match(line)
            assert m, f"bad comment line: {line!r}"
            assert m["name"] not in types, f"{m['name']} typed twice"
            types[m["name"]] = m["kind"]
            current = m["name"]
            continue
        m = SAMPLE.match(line)
        assert m, f"bad sample line: {line!r}"
        assert m["name"] == current, f"sample {m['name']} outside its family ({current})"
        key = m["name"] + (m["labels"] or "")
        assert key not in samples, f"duplicate sample {key}"
        samples[key] = float(m["value"])
    return types, samples
