"""Each tier's endpoint on one running system: what receive accepts and refuses over both
transports (a refused document is never published), the sink's answer to a redelivery, the store
protocol's depth and errors, and the /metrics exposition."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from caplab.systems import msgbus
from caplab.systems.msgbus import MESSAGING_BODY, RunningMsgbus
from support.msgbus_client import frame, parse_exposition, read_frame, send_tcp, tcp_exchange

GOOD = MESSAGING_BODY.replace("{seq}", "1").encode()
NOT_XML = b"<order><item></order>"
REFUSED = [
    (NOT_XML, 400, "not well-formed XML"),
    (b"just text", 400, "not well-formed XML"),
    (b"<order>caf\xe9</order>", 400, "not UTF-8"),
    (b"<invoice/>", 422, "no subscription for message type 'invoice'"),
]


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMsgbus]:
    """One system for the tests of this module (each looks at counter differences only)."""
    tmp: Path = tmp_path_factory.mktemp("msgbus")
    with msgbus.start(1, 1, data_dir=tmp / "data", sink_log=tmp / "sink.log") as running:
        yield running


def received(bus: RunningMsgbus) -> float:
    return bus.metrics()["msgbus_documents_received_total"]


@pytest.mark.parametrize(("body", "status", "reason"), REFUSED)
def test_tcp_refuses_with_an_err_frame_and_publishes_nothing(
    bus: RunningMsgbus, body: bytes, status: int, reason: str
) -> None:
    before = bus.metrics()
    reply = tcp_exchange(bus.tcp_port, body)
    assert reply.startswith(b"ERR "), reply
    assert reason in reply.decode()
    after = bus.metrics()
    assert after["msgbus_documents_received_total"] == before["msgbus_documents_received_total"]
    assert after["msgbus_documents_rejected_total"] == before["msgbus_documents_rejected_total"] + 1
    assert sum(v for k, v in after.items() if k.startswith("msgbus_store_published_total")) == sum(
        v for k, v in before.items() if k.startswith("msgbus_store_published_total")
    )


@pytest.mark.parametrize(("body", "status", "reason"), REFUSED)
def test_http_refuses_with_a_4xx_and_publishes_nothing(
    bus: RunningMsgbus, body: bytes, status: int, reason: str
) -> None:
    before = received(bus)
    conn = http.client.HTTPConnection("127.0.0.1", bus.http_port, timeout=10)
    conn.request("POST", "/messages", body=body)
    reply = conn.getresponse()
    assert reply.status == status
    assert reason in reply.read().decode()
    # The connection stays usable after a refusal (keep-alive).
    conn.request("POST", "/messages", body=GOOD)
    ok = conn.getresponse()
    assert ok.status == 202
    assert isinstance(json.loads(ok.read())["id"], int)
    conn.close()
    assert received(bus) == before + 1


def test_a_connection_keeps_going_after_a_refusal_and_ids_increase(bus: RunningMsgbus) -> None:
    with socket.create_connection(("127.0.0.1", bus.tcp_port), timeout=10) as sock:
        first = send_tcp(sock, GOOD)
        sock.sendall(frame(NOT_XML))
        assert read_frame(sock).startswith(b"ERR ")
        second = send_tcp(sock, GOOD)
    assert second > first


def test_http_other_paths_and_methods(bus: RunningMsgbus) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", bus.http_port, timeout=10)
    for method, path, status in [("GET", "/health", 200), ("GET", "/messages", 405), ("POST", "/nope", 404)]:
        conn.request(method, path, body=GOOD if method == "POST" else None)
        reply = conn.getresponse()
        reply.read()
        assert (method, path, reply.status) == (method, path, status)
    conn.close()


def test_the_sink_acknowledges_a_redelivery_but_counts_it_once(bus: RunningMsgbus) -> None:
    # Earlier tests' documents may still be on their way to the sink: count from a quiet bus.
    before = bus.wait_drained()
    delivery = b"999999\n<invoice/>"
    assert tcp_exchange(bus.sink_port, delivery) == b"OK"
    assert tcp_exchange(bus.sink_port, delivery) == b"OK duplicate"
    after = bus.metrics()
    assert after["msgbus_documents_processed_total"] == before["msgbus_documents_processed_total"] + 1
    assert after["msgbus_duplicate_deliveries_total"] == before["msgbus_duplicate_deliveries_total"] + 1
    assert bus.sink_log is not None
    assert bus.sink_log.read_text().splitlines().count("999999") == 1


def test_metrics_parse_as_prometheus_text(bus: RunningMsgbus) -> None:
    with socket.create_connection(("127.0.0.1", bus.tcp_port), timeout=10) as sock:
        send_tcp(sock, GOOD)
    bus.wait_until(lambda m: m["msgbus_queue_depth"] == 0, timeout_s=10)
    with urllib.request.urlopen(bus.metrics_url, timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        types, samples = parse_exposition(reply.read().decode())
    assert types["msgbus_documents_received_total"] == "counter"
    assert types["msgbus_documents_processed_total"] == "counter"
    assert types["msgbus_queue_depth"] == "gauge"
    assert types["msgbus_hosts"] == "gauge"
    assert samples["msgbus_hosts"] == 1
    assert samples["msgbus_documents_received_total"] >= 1
    assert samples['msgbus_store_queue_depth{store="0"}'] == samples["msgbus_queue_depth"] == 0
    assert all(name.endswith("_total") for name, kind in types.items() if kind == "counter")


def test_the_store_answers_depth_and_refuses_what_it_does_not_know(bus: RunningMsgbus) -> None:
    with socket.create_connection(("127.0.0.1", bus.tcp_port), timeout=10) as sock:
        send_tcp(sock, GOOD)
    bus.wait_until(lambda m: m["msgbus_queue_depth"] == 0, timeout_s=10)
    store = bus.store_ports[0]
    assert json.loads(tcp_exchange(store, b'{"op": "depth"}')) == {"ok": True, "depth": 0}
    unknown = json.loads(tcp_exchange(store, b'{"op": "vacuum"}'))
    assert unknown["ok"] is False and "unknown op 'vacuum'" in unknown["error"]
    bad = json.loads(tcp_exchange(store, b'{"op": "claim", "max": 0}'))
    assert bad["ok"] is False and "max in 1" in bad["error"]
