"""``GET /metrics``: the counters of every tier in Prometheus text exposition format (0.0.4).

The supervisor serves it from the shared counters file (counters.py), so a scrape reads a few
hundred bytes of memory and asks no tier anything: cheap enough to scrape every half second under
load. Counters are cumulative since start; ``msgbus_queue_depth`` is published minus completed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from caplab.systems.counterfile import CounterFile
from caplab.systems.exposition import CONTENT_TYPE
from caplab.systems.msgbus.counters import (
    Layout,
    MessageBoxCounter,
    ProcessingHostCounter,
    ReceiveCounter,
    SinkCounter,
)


@dataclass(frozen=True)
class Family:
    name: str
    kind: str
    help: str
    samples: list[tuple[str, int]]
    """(label set such as ``{store="0"}`` or "", value)"""


def families(counters: CounterFile, layout: Layout, hosts_alive: int) -> list[Family]:
    receive = counters.read(layout.RECEIVE)
    sink = counters.read(layout.SINK)
    stores = [counters.read(layout.store(i)) for i in range(layout.stores)]
    hosts = [counters.read(layout.host(i)) for i in range(layout.hosts)]
    depths = [s[MessageBoxCounter.PUBLISHED] - s[MessageBoxCounter.COMPLETED] for s in stores]

    def per_store(field: MessageBoxCounter) -> list[tuple[str, int]]:
        return [(f'{{store="{i}"}}', s[field]) for i, s in enumerate(stores)]

    def per_host(field: ProcessingHostCounter) -> list[tuple[str, int]]:
        return [(f'{{host="{i}"}}', h[field]) for i, h in enumerate(hosts)]

    return [
        Family(
            "msgbus_documents_received_total",
            "counter",
            "Documents acknowledged by receive (durably published).",
            [("", receive[ReceiveCounter.RECEIVED])],
        ),
        Family(
            "msgbus_documents_processed_total",
            "counter",
            "Documents delivered to the sink for the first time.",
            [("", sink[SinkCounter.PROCESSED])],
        ),
        Family(
            "msgbus_queue_depth",
            "gauge",
            "Messages published and not yet completed, across stores.",
            [("", sum(depths))],
        ),
        Family(
            "msgbus_documents_rejected_total",
            "counter",
            "Documents refused by receive (not well-formed UTF-8 XML, or no subscriber).",
            [("", receive[ReceiveCounter.REJECTED])],
        ),
        Family(
            "msgbus_publish_failures_total",
            "counter",
            "Documents not acknowledged because the store failed the publish.",
            [("", receive[ReceiveCounter.PUBLISH_FAILED])],
        ),
        Family(
            "msgbus_publish_batches_total",
            "counter",
            "Publish requests from receive to the stores (documents per batch = received / this).",
            [("", receive[ReceiveCounter.BATCHES])],
        ),
        Family(
            "msgbus_deliveries_total",
            "counter",
            "Deliveries the sink acknowledged, redeliveries included.",
            [("", sink[SinkCounter.DELIVERIES])],
        ),
        Family(
            "msgbus_duplicate_deliveries_total",
            "counter",
            "Redeliveries the sink acknowledged without counting them again.",
            [("", sink[SinkCounter.DUPLICATES])],
        ),
        Family("msgbus_hosts", "gauge", "Host processes running.", [("", hosts_alive)]),
        Family("msgbus_stores", "gauge", "MessageBox stores.", [("", layout.stores)]),
        Family(
            "msgbus_store_queue_depth",
            "gauge",
            "Messages published and not yet completed, per store.",
            [(f'{{store="{i}"}}', d) for i, d in enumerate(depths)],
        ),
        Family(
            "msgbus_store_published_total",
            "counter",
            "Messages published to the store (received and republished by orchestrations).",
            per_store(MessageBoxCounter.PUBLISHED),
        ),
        Family(
            "msgbus_store_completed_total",
            "counter",
            "Messages completed.",
            per_store(MessageBoxCounter.COMPLETED),
        ),
        Family(
            "msgbus_store_claimed_total",
            "counter",
            "Messages claimed by hosts.",
            per_store(MessageBoxCounter.CLAIMED),
        ),
        Family(
            "msgbus_store_expired_leases_total",
            "counter",
            "Leases that ran out (the host died or stalled): the message became claimable again.",
            per_store(MessageBoxCounter.EXPIRED),
        ),
        Family(
            "msgbus_store_lost_leases_total",
            "counter",
            "Completes refused because the lease had passed to another claim.",
            per_store(MessageBoxCounter.LOST_LEASES),
        ),
        Family(
            "msgbus_store_commits_total",
            "counter",
            "Group commits (durable transactions) of the store.",
            per_store(MessageBoxCounter.COMMITS),
        ),
        Family(
            "msgbus_host_sent_total",
            "counter",
            "Documents a host delivered to the sink.",
            per_host(ProcessingHostCounter.SENT),
        ),
        Family(
            "msgbus_host_orchestrations_total",
            "counter",
            "Orchestration steps a host completed.",
            per_host(ProcessingHostCounter.ORCHESTRATIONS),
        ),
        Family(
            "msgbus_host_faults_total",
            "counter",
            "Maps that failed; a fault document was delivered instead.",
            per_host(ProcessingHostCounter.FAULTS),
        ),
    ]


def render(fams: list[Family]) -> str:
    lines = []
    for fam in fams:
        lines.append(f"# HELP {fam.name} {fam.help}")
        lines.append(f"# TYPE {fam.name} {fam.kind}")
        lines.extend(f"{fam.name}{labels} {value}" for labels, value in fam.samples)
    return "\n".join(lines) + "\n"


class MetricsConnection(asyncio.Protocol):
    """A minimal HTTP/1.1 server: ``GET /metrics`` (keep-alive), anything else 404."""

    def __init__(self, exposition: Callable[[], str]) -> None:
        self.exposition = exposition
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None and (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self.buffer[:end]).decode("latin-1")
            del self.buffer[: end + 4]
            request_line = head.split("\r\n", 1)[0].split(" ")
            close = "connection: close" in head.lower()
            if (
                len(request_line) >= 2
                and request_line[0] in ("GET", "HEAD")
                and request_line[1].split("?")[0] == "/metrics"
            ):
                status, ctype, body = "200 OK", CONTENT_TYPE, self.exposition().encode()
            else:
                status, ctype, body = "404 Not Found", "text/plain", b"GET /metrics\n"
            if request_line[0] == "HEAD":
                body = b""
            extra = "Connection: close\r\n" if close else ""
            head = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            self.transport.write(head.encode() + body)
            if close:
                self.transport.close()
                self.transport = None
        if len(self.buffer) > 64 * 1024 and self.transport is not None:
            self.transport.close()
