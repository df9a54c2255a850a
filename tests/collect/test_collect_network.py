"""The network collector against a known transfer over loopback.

Loopback may carry other traffic at the same time (other tests, a benchmark), so the transfer is
large and quick, and the tolerance above it allows for background measured just before.
"""

from __future__ import annotations

import socket
import threading
import time

from caplab.collect import NetworkCollector, ResourceSample
from caplab.collect.network import link_mb_s

SIZE = 64_000_000


def get(samples: list[ResourceSample], scope: str, metric: str) -> float:
    (v,) = [s.value for s in samples if s.scope == scope and s.metric == metric]
    return v


def send_over_loopback(size: int) -> None:
    """Sends ``size`` payload bytes over a loopback TCP connection and waits until all arrived."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        received = 0

        def sink() -> None:
            nonlocal received
            conn, _ = server.accept()
            with conn:
                while chunk := conn.recv(1 << 20):
                    received += len(chunk)

        reader = threading.Thread(target=sink)
        reader.start()
        block = b"\0" * (1 << 20)
        with socket.create_connection(server.getsockname()) as client:
            sent = 0
            while sent < size:
                n = min(len(block), size - sent)
                client.sendall(block[:n])
                sent += n
        reader.join(timeout=30)
        assert received == size


def lo_window(net: NetworkCollector, size: int = 0) -> dict[str, float]:
    """lo's bytes and packets over one sampled window in which ``size`` bytes are sent (or, with
    no size, 0.1 s of whatever else uses loopback); ``wall`` is the window's length, on the
    collector's own clock (its rates are per second of it)."""
    net.start()
    began = net.sampled_at
    if size:
        send_over_loopback(size)
    else:
        time.sleep(0.1)
    samples = net.sample(1.0)
    wall = net.sampled_at - began
    return {
        "rx": get(samples, "net:lo", "rx_mb_s") * wall * 1e6,
        "tx": get(samples, "net:lo", "tx_mb_s") * wall * 1e6,
        "packets": get(samples, "net:lo", "rx_packets_s") * wall,
        "wall": wall,
    }


def test_loopback_moves_by_the_bytes_sent() -> None:
    net = NetworkCollector()
    background = lo_window(net)
    sent = lo_window(net, SIZE)
    # On loopback every byte is received as it is sent: rx and tx each count it once, with TCP/IP
    # headers on top (under 1 % at loopback's 64 KiB MTU) and the ACKs going back. Other traffic
    # gets three times the rate seen just before.
    slack = SIZE * 0.03 + 3 * background["rx"] / background["wall"] * sent["wall"]
    assert SIZE <= sent["rx"] <= SIZE + slack, (sent, background)
    assert SIZE <= sent["tx"] <= SIZE + slack, (sent, background)
    assert sent["packets"] >= SIZE / 65536


def test_link_speed_is_only_reported_when_known() -> None:
    net = NetworkCollector()
    net.start()
    samples = net.sample(0.1)
    assert link_mb_s("lo") is None  # loopback has no line rate
    assert not [s for s in samples if s.scope == "net:lo" and s.metric == "link_mb_s"]
    assert link_mb_s("no-such-interface") is None
    for s in samples:
        if s.metric == "link_mb_s":
            assert s.value > 0
