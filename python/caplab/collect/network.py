"""Network interfaces: bytes and packets each way, and the link speed where the kernel knows it.

Loopback is included: on one machine the load and the system under test talk over ``lo``, and that
traffic is the workload's. Counters come from psutil (``/proc/net/dev`` on Linux), which also
undoes 32-bit counter wrap-around.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from caplab.collect.base import ResourceSample

__all__ = ["NetworkCollector", "link_mb_s"]

MB = 1_000_000
SYS_NET = Path("/sys/class/net")
PROFILE_LINK = "caplab-"
"""The host end of a profile's veth pair (profiles/links.py names them so)."""


def link_mb_s(iface: str) -> float | None:
    """The link's speed in MB/s (``/sys/class/net/IFACE/speed`` is Mbit/s), or None when the
    interface has none (loopback, virtual and most cloud interfaces report -1 or refuse)."""
    try:
        mbit = int((SYS_NET / iface / "speed").read_text().strip())
    except (OSError, ValueError):
        return None
    return mbit / 8 if mbit > 0 else None


class NetworkCollector:
    """Scope ``net:IFACE``: rx_mb_s, tx_mb_s, rx_packets_s, tx_packets_s, and link_mb_s when known."""

    name = "network"

    def __init__(self) -> None:
        self._prev: dict[str, tuple[int, int, int, int]] = {}
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""
        self._links: dict[str, float | None] = {}

    def start(self) -> None:
        self.sampled_at = time.monotonic()
        self._prev = self._read()
        self._links = {iface: link_mb_s(iface) for iface in self._prev}

    def sample(self, t: float) -> list[ResourceSample]:
        now_t = time.monotonic()
        now = self._read()
        wall = max(now_t - self.sampled_at, 1e-9)
        out: list[ResourceSample] = []
        for iface, (rx, tx, rx_p, tx_p) in now.items():
            if iface.startswith(PROFILE_LINK):
                continue  # a role's link: its profile collector reports it as link:ROLE, at its rate
            prev = self._prev.get(iface)
            if prev is None:
                continue  # appeared mid-trial: from the next sample on
            values = {
                "rx_mb_s": max(0, rx - prev[0]) / MB / wall,
                "tx_mb_s": max(0, tx - prev[1]) / MB / wall,
                "rx_packets_s": max(0, rx_p - prev[2]) / wall,
                "tx_packets_s": max(0, tx_p - prev[3]) / wall,
            }
            link = self._links.get(iface)
            if link is not None:
                values["link_mb_s"] = link
            out += [ResourceSample(t, f"net:{iface}", metric, value) for metric, value in values.items()]
        self._prev, self.sampled_at = now, now_t
        return out

    def stop(self) -> None:
        self._prev = {}

    @staticmethod
    def _read() -> dict[str, tuple[int, int, int, int]]:
        counters = psutil.net_io_counters(pernic=True)
        return {
            iface: (c.bytes_recv, c.bytes_sent, c.packets_recv, c.packets_sent)
            for iface, c in counters.items()
        }
