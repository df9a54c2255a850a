"""Prometheus text exposition (format 0.0.4) as the reference systems serve and read it.

A system renders its own families; what they share is the content type, a small threaded server for
``GET /metrics`` (anything else is a 404, and scrapes are not logged: one a second is not news), and
``parse`` and ``scrape``, which turn an exposition back into samples for tests and studies.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metrics_server(port: int, exposition: Callable[[], str]) -> ThreadingHTTPServer:
    """An HTTP server bound to 127.0.0.1:port (0: a free one) that answers ``GET /metrics`` with
    ``exposition()``, rendered afresh for each scrape; the caller decides where it serves."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = exposition().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: a scrape a second is not news."""

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def parse(text: str) -> dict[str, float]:
    """Samples of an exposition as ``{"name{labels}": value}`` (enough for the systems' own
    metrics: no escaped spaces in label values, no timestamps)."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def scrape(url: str) -> dict[str, float]:
    """The samples ``GET url`` answers now (see ``parse``)."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        return parse(reply.read().decode())
