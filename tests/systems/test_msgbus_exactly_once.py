"""Every acknowledged document reaches the back end exactly once: across host and store counts,
both flows and both receive transports, on SQLite and on PostgreSQL.

The ids compared are the interchange ids msgbus assigns and returns in each acknowledgement; the
sink appends each newly delivered id to its log, so a lost document is missing from the log and a
double delivery shows up twice.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from caplab.systems.msgbus import MESSAGING_BODY, ORCHESTRATION_BODY, RunningMsgbus
from support.msgbus_client import Start, documents, send_concurrently, sink_log

DOCUMENTS = 240
CONNECTIONS = 4
BODIES = {"messaging": MESSAGING_BODY, "orchestration": ORCHESTRATION_BODY}


def assert_exactly_once(bus: RunningMsgbus, acked: list[int], flow: str) -> None:
    assert len(acked) == len(set(acked)), "receive handed out an interchange id twice"
    metrics = bus.wait_drained(timeout_s=30)
    assert bus.sink_log is not None
    delivered = Counter(sink_log(bus.sink_log))
    twice = sorted(i for i, n in delivered.items() if n > 1)
    assert not twice, f"delivered more than once: {twice[:10]}"
    missing = sorted(set(acked) - set(delivered))
    assert not missing, f"acknowledged but never delivered: {missing[:10]}"
    assert set(delivered) == set(acked), "the sink got documents nobody acknowledged"
    assert metrics["msgbus_documents_received_total"] == len(acked)
    assert metrics["msgbus_documents_processed_total"] == len(acked)
    orchestrated = sum(v for k, v in metrics.items() if k.startswith("msgbus_host_orchestrations_total"))
    assert orchestrated == (len(acked) if flow == "orchestration" else 0)
    faults = sum(v for k, v in metrics.items() if k.startswith("msgbus_host_faults_total"))
    assert faults == 0, "a map failed on the documented body"


@pytest.mark.parametrize(
    ("hosts", "stores", "flow", "transport"),
    [
        (1, 1, "messaging", "tcp"),
        (3, 2, "orchestration", "tcp"),
        (2, 4, "messaging", "http"),
        (2, 4, "orchestration", "http"),
    ],
)
@pytest.mark.slow
def test_every_acknowledged_document_is_delivered_exactly_once(
    start_msgbus: Start, hosts: int, stores: int, flow: str, transport: str
) -> None:
    bus = start_msgbus(hosts, stores)
    port = bus.tcp_port if transport == "tcp" else bus.http_port
    acked = send_concurrently(transport, port, documents(BODIES[flow], DOCUMENTS), CONNECTIONS)
    assert len(acked) == DOCUMENTS
    assert_exactly_once(bus, acked, flow)


@pytest.mark.parametrize("flow", ["messaging", "orchestration"])
def test_exactly_once_on_postgresql(start_msgbus: Start, pg_url: str, flow: str) -> None:
    bus = start_msgbus(2, 2, store_url=pg_url)
    acked = send_concurrently("tcp", bus.tcp_port, documents(BODIES[flow], DOCUMENTS), CONNECTIONS)
    assert_exactly_once(bus, acked, flow)


@pytest.mark.slow
def test_a_killed_host_loses_nothing(start_msgbus: Start) -> None:
    """One host is frozen while it holds claims, then SIGKILLed: after the lease (1 s) expires the
    other host takes its messages over, and every acknowledged document arrives exactly once."""
    bus = start_msgbus(2, 2, lease_s=1.0)
    victim = bus.host_pids()[0]
    killed: list[int] = []

    def freeze_then_kill(sent: int) -> None:
        if sent == 5:
            os.kill(victim, signal.SIGSTOP)  # its outstanding claims are served into its socket
        elif sent == 30:
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    bodies = documents(MESSAGING_BODY, 400)
    acked = send_concurrently("tcp", bus.tcp_port, bodies, CONNECTIONS, between=freeze_then_kill)
    assert killed == [victim]
    assert_exactly_once(bus, acked, "messaging")
    metrics = bus.metrics()
    assert metrics["msgbus_hosts"] == 1
    expired = sum(v for k, v in metrics.items() if k.startswith("msgbus_store_expired_leases_total"))
    assert expired > 0, "the killed host held no claim: the test did not exercise lease expiry"
    assert bus.process.poll() is None, "the supervisor must carry on without the dead host"
    assert f"pid {victim}" in bus.stderr_tail()
