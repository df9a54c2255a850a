"""The live page's server: the page itself, the state as JSON, server-sent events as the state
changes, and the study's report once written — on 127.0.0.1 by default, stdlib only.

The run never waits for a browser: a change is appended to each connected page's queue (bounded;
a page that falls behind loses its oldest events and gets the whole state instead) and each page
is written to by a thread of its own.
"""

from __future__ import annotations

import json
import mimetypes
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from caplab.live.state import Event, LiveState

QUEUE = 256
"""Events kept for a page that reads slowly; past it the oldest go and it is sent the whole state."""
KEEPALIVE_S = 10.0
"""A comment this often on a quiet stream, so a page that went away is noticed."""
CLOSE_GRACE_S = 2.0
"""At the end, how long the pages connected are given to take their last events."""
FINAL = ("complete", "failed", "interrupted")


class Client:
    """One connected page: its events not yet written."""

    def __init__(self, first: Event) -> None:
        self.queue: deque[Event] = deque([first], maxlen=QUEUE)
        self.behind = False
        """Lost events to the bound: its next write is the whole state instead."""

    def offer(self, event: Event) -> None:
        if len(self.queue) == QUEUE:
            self.behind = True
        self.queue.append(event)


class LiveServer:
    """Serves the page and its events until `stop`; `apply` changes the state and tells every page."""

    def __init__(self, port: int, address: str = "127.0.0.1") -> None:
        self.state = LiveState()
        self.report_dir: Path | None = None
        self._changed = threading.Condition()
        self._clients: set[Client] = set()
        self._closing = False
        self._httpd = ThreadingHTTPServer((address, port), _handler(self))  # OSError: port taken
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="caplab-live", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]!s}:{self.port}/"

    def start(self) -> None:
        self._thread.start()

    def apply(self, change: Callable[[LiveState], list[Event]]) -> None:
        """Changes the state (under the lock the pages read it with) and queues what changed."""
        with self._changed:
            events = change(self.state)
            for client in self._clients:
                for event in events:
                    client.offer(event)
            self._changed.notify_all()

    def serve_report(self, directory: Path) -> str:
        """Serves the study's report directory; the page's link to it."""
        self.report_dir = directory.resolve()
        return "report/index.html"

    def stop(self) -> None:
        """Lets the pages take their last events (briefly), then closes every connection."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
            self._changed.wait_for(lambda: not self._clients, timeout=CLOSE_GRACE_S)
        self._httpd.shutdown()
        self._httpd.server_close()

    def pages(self) -> int:
        """How many pages are connected."""
        with self._changed:
            return len(self._clients)

    def join(self) -> Client:
        with self._changed:
            snapshot = self.state.snapshot()
            client = Client(("done" if self.state.status in FINAL else "snapshot", snapshot))
            self._clients.add(client)
            return client

    def leave(self, client: Client) -> None:
        with self._changed:
            self._clients.discard(client)
            self._changed.notify_all()

    def take(self, client: Client) -> tuple[list[Event], bool]:
        """The client's events to write (waiting up to the keep-alive for some), and whether the
        server is closing."""
        with self._changed:
            self._changed.wait_for(lambda: client.queue or self._closing, timeout=KEEPALIVE_S)
            if client.behind:
                client.behind = False
                client.queue.clear()
                return [("snapshot", self.state.snapshot())], self._closing
            events = list(client.queue)
            client.queue.clear()
            return events, self._closing

    def snapshot(self) -> dict[str, Any]:
        with self._changed:
            return self.state.snapshot()


def page() -> bytes:
    return (files("caplab.live") / "page.html").read_bytes()


class _Handler(BaseHTTPRequestHandler):
    """The page, ``/state``, ``/events`` and ``/report/…`` of one server (``live``, set per server)."""

    live: LiveServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        if path in ("/", "/index.html"):
            self._send(200, "text/html; charset=utf-8", page())
        elif path == "/state":
            self._send(200, "application/json", json.dumps(self.live.snapshot()).encode())
        elif path == "/events":
            self._stream()
        elif path.startswith("/report/") and (found := _report_file(self.live.report_dir, path)):
            kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
            self._send(200, kind, found.read_bytes())
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        client = self.live.join()
        try:
            while True:
                events, closing = self.live.take(client)
                if not events and closing:
                    return
                text = "".join(sse(name, data) for name, data in events) or ": keep-alive\n\n"
                self.wfile.write(text.encode())
                self.wfile.flush()
        except OSError:  # the page went away
            return
        finally:
            self.live.leave(client)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal is the run's."""


def _handler(server: LiveServer) -> type[_Handler]:
    return type("LiveHandler", (_Handler,), {"live": server})


def sse(name: str, data: dict[str, Any]) -> str:
    """One server-sent event: its name and one line of JSON."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _report_file(root: Path | None, path: str) -> Path | None:
    """The report's file a ``/report/…`` path names; None outside the report's directory."""
    if root is None:
        return None
    found = (root / path.removeprefix("/report/")).resolve()
    return found if found.is_relative_to(root) and found.is_file() else None
