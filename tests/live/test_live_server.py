"""The live page's server in this process, on a free loopback port: what a page is sent, that a page
reading slowly costs the run nothing, that no password reaches it, and that only the report's own
files are served beside it."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caplab.engine import IntervalSnapshot, LatencySummary
from caplab.live import LiveServer
from caplab.live.server import QUEUE
from caplab.live.state import Event, LiveState
from support import live

LATENCY = LatencySummary(count=100, min=0.1, mean=1.0, p50=0.9, p90=1.5, p99=3.0, p999=None, max=4.0)


def snapshot(index: int, throughput: float = 100.0) -> IntervalSnapshot:
    return IntervalSnapshot(index, index * 1.0, index + 1.0, False, 100, 100, 0, 0, 1, throughput, LATENCY)


def measured(i: int) -> Callable[[LiveState], list[Event]]:
    """The change an interval makes."""
    return lambda s: s.interval(snapshot(i), [])


@pytest.fixture
def server() -> Iterator[LiveServer]:
    served = LiveServer(0)
    served.start()
    cells = [("workers=1", "pending"), ("workers=2", "pending")]
    served.apply(lambda s: s.begin("study", "study 1: demo", cells))
    try:
        yield served
    finally:
        served.stop()


def get(server: LiveServer, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request("GET", path)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def test_a_page_is_sent_the_state_then_each_change_then_done(server: LiveServer) -> None:
    seen: list[live.Event] = []
    reader = threading.Thread(target=lambda: seen.extend(live.until_done(server.port, timeout_s=10)))
    reader.start()
    while not server.pages():  # the page has connected
        threading.Event().wait(0.01)
    server.apply(lambda s: s.cell_started(0))
    for i in range(3):
        server.apply(measured(i))
    server.apply(lambda s: s.finish("complete"))
    reader.join(timeout=10)
    names = [e.name for e in seen]
    assert names == ["snapshot", "snapshot", "trial", *["interval"] * 3, "done"]
    assert seen[0].data["cells"][0]["state"] == "pending"
    assert seen[1].data["cells"][0]["state"] == "running"
    assert seen[-1].data["status"] == "complete"
    assert len(seen[-1].data["trial"]["intervals"]) == 3


def test_a_slow_page_loses_events_to_the_bound_and_gets_the_whole_state(server: LiveServer) -> None:
    client = server.join()  # connected, reading nothing
    server.apply(lambda s: s.cell_started(0))
    for i in range(QUEUE * 2):  # never waits for the page
        server.apply(measured(i))
    assert len(client.queue) == QUEUE
    events, closing = server.take(client)
    server.leave(client)
    [(name, state)] = events
    assert name == "snapshot" and not closing
    assert len(state["trial"]["intervals"]) == QUEUE * 2  # all of them, none twice
    assert not client.queue


def test_no_password_reaches_the_page(server: LiveServer) -> None:
    secret = "pw-s3cret"
    title = f"caplab load postgresql://bench:{secret}@db/x"
    server.apply(lambda s: s.begin("load", title, [("a", "pending")]))
    server.apply(lambda s: s.note(f"connected to http://admin:{secret}@10.0.0.5:8080/"))
    server.apply(lambda s: s.cell_finished(0, "failed", {"reason": f"refused: smtp://u:{secret}@mail/"}))
    status, body = get(server, "/state")
    assert status == 200 and secret not in body.decode()
    assert "bench:***@db" in json.loads(body)["title"]
    client = server.join()
    events, _ = server.take(client)
    server.leave(client)
    assert secret not in json.dumps(events)


def test_the_report_is_served_and_nothing_beside_it(server: LiveServer, tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("<html>the report</html>")
    (tmp_path / "secret.txt").write_text("not for the page")
    assert get(server, "/report/index.html")[0] == 404  # not yet written
    href = server.serve_report(report)
    assert get(server, f"/{href}") == (200, b"<html>the report</html>")
    assert get(server, "/report/../secret.txt")[0] == 404
    assert get(server, "/report/%2e%2e/secret.txt")[0] == 404
    assert get(server, "/elsewhere")[0] == 404
    status, page = get(server, "/")
    assert status == 200 and b"new EventSource" in page
