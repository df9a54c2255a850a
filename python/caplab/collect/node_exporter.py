"""A remote host through Prometheus's node_exporter: the same CPU, memory, disk and network
figures as the local collectors give, read over HTTP from the host the system runs on, on the
load's clock.

Scope ``node:NAME`` gets the host collector's keys — cpu_percent (100 = one core), cpu_util_percent,
user/system/iowait/steal_percent, cores, mem_used_mb (total − available), mem_available_mb,
mem_total_mb, load1 — and disk_busy_percent (the busiest disk's), disk_read/write_iops and _mb_s,
net_rx/tx_mb_s (sums; loopback left out: on a remote host it is not the load's traffic). A role
placed on that host (``roles: {db: {host: db1}}``) gets the host's CPU and memory under
``role:ROLE`` with ``quota_cpus`` = its cores and ``host_level`` = 1: attributed at host level,
since node_exporter does not see processes — which the report says.

The exposition text is parsed by the Prometheus client library's own parser.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from caplab.collect.base import ResourceSample

__all__ = ["NodeExporterCollector", "read_node"]

MB = 1_000_000
MIB = 1024 * 1024
TIMEOUT_S = 2.0
IDLE_MODES = ("idle", "iowait")
VIRTUAL_DEVICES = ("loop", "ram", "dm-", "md", "sr", "zram")
"""Block devices whose IO is another device's (or none): left out of the disk figures."""

Series = dict[str, dict[tuple[tuple[str, str], ...], float]]
"""Metric name → label set → value."""


def read_node(url: str) -> Series:
    """One scrape of a node_exporter, every sample by name and labels."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as reply:
            text = reply.read().decode()
    except (urllib.error.URLError, OSError) as e:
        raise ConnectionError(f"node_exporter at {url}: {getattr(e, 'reason', e)}") from e
    out: Series = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name][tuple(sorted(s.labels.items()))] = float(s.value)
    return out


def _by(series: Series, name: str, label: str) -> dict[str, float]:
    """``{label value: summed value}`` of one metric."""
    out: dict[str, float] = defaultdict(float)
    for labels, value in series.get(name, {}).items():
        out[dict(labels).get(label, "")] += value
    return out


def _one(series: Series, name: str) -> float | None:
    values = series.get(name)
    return sum(values.values()) if values else None


class NodeExporterCollector:
    """One remote host (see the module docstring)."""

    def __init__(self, host: str, url: str, roles: list[str] | None = None) -> None:
        self.host = host
        self.url = url
        self.roles = list(roles or [])
        self.name = f"node:{host}"
        self._prev: Series = {}
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""

    def start(self) -> None:
        self._prev = read_node(self.url)
        self.sampled_at = time.monotonic()

    def sample(self, t: float) -> list[ResourceSample]:
        now = read_node(self.url)
        now_t = time.monotonic()
        wall = max(now_t - self.sampled_at, 1e-9)
        prev, self._prev, self.sampled_at = self._prev, now, now_t
        values: dict[str, float] = {}
        values |= _cpu(prev, now)
        values |= _memory(now)
        values |= _disks(prev, now, wall)
        values |= _network(prev, now, wall)
        load1 = _one(now, "node_load1")
        if load1 is not None:
            values["load1"] = load1
        scope = f"node:{self.host}"
        out = [ResourceSample(t, scope, m, v) for m, v in values.items()]
        for role in self.roles:
            attributed: dict[str, float] = {
                k: values[k] for k in ("cpu_percent", "mem_used_mb") if k in values
            }
            attributed |= {"quota_cpus": values.get("cores", 0.0), "host_level": 1.0}
            if "cpu_percent" in values:
                attributed["max_thread_cpu_percent"] = 0.0  # threads are not visible from here
            out += [ResourceSample(t, f"role:{role}", m, v) for m, v in attributed.items()]
        return out

    def stop(self) -> None:
        self._prev = {}


def _cpu(prev: Series, now: Series) -> dict[str, float]:
    """Shares of the CPU seconds each core accounted in the interval, as the host collector's."""
    name = "node_cpu_seconds_total"
    per_core: dict[str, dict[str, float]] = defaultdict(dict)
    for labels, value in now.get(name, {}).items():
        d = dict(labels)
        before = prev.get(name, {}).get(labels)
        if before is not None:
            per_core[d.get("cpu", "")][d.get("mode", "")] = max(0.0, value - before)
    if not per_core:
        return {}
    kinds = {"busy": 0.0, "user": 0.0, "system": 0.0, "iowait": 0.0, "steal": 0.0}
    for modes in per_core.values():
        total = sum(modes.values())
        if total <= 0:
            continue
        kinds["busy"] += 100 * (total - sum(modes.get(m, 0.0) for m in IDLE_MODES)) / total
        kinds["user"] += 100 * (modes.get("user", 0.0) + modes.get("nice", 0.0)) / total
        kinds["system"] += 100 * sum(modes.get(m, 0.0) for m in ("system", "irq", "softirq")) / total
        kinds["iowait"] += 100 * modes.get("iowait", 0.0) / total
        kinds["steal"] += 100 * modes.get("steal", 0.0) / total
    cores = float(len(per_core))
    return {
        "cpu_percent": kinds["busy"],
        "cpu_util_percent": kinds["busy"] / cores,
        "user_percent": kinds["user"],
        "system_percent": kinds["system"],
        "iowait_percent": kinds["iowait"],
        "steal_percent": kinds["steal"],
        "cores": cores,
    }


def _memory(now: Series) -> dict[str, float]:
    total, available = _one(now, "node_memory_MemTotal_bytes"), _one(now, "node_memory_MemAvailable_bytes")
    if total is None or available is None:
        return {}
    return {
        "mem_used_mb": (total - available) / MIB,
        "mem_available_mb": available / MIB,
        "mem_total_mb": total / MIB,
    }


def _rates(prev: Series, now: Series, name: str, label: str, wall: float) -> dict[str, float]:
    before = _by(prev, name, label)
    return {k: max(0.0, v - before[k]) / wall for k, v in _by(now, name, label).items() if k in before}


def _disks(prev: Series, now: Series, wall: float) -> dict[str, float]:
    figures = {
        "read_iops": _rates(prev, now, "node_disk_reads_completed_total", "device", wall),
        "write_iops": _rates(prev, now, "node_disk_writes_completed_total", "device", wall),
        "read_mb_s": _rates(prev, now, "node_disk_read_bytes_total", "device", wall),
        "write_mb_s": _rates(prev, now, "node_disk_written_bytes_total", "device", wall),
        "busy": _rates(prev, now, "node_disk_io_time_seconds_total", "device", wall),
    }
    devices = [d for d in figures["busy"] if not d.startswith(VIRTUAL_DEVICES)]
    if not devices:
        return {}
    scale = {"read_mb_s": 1 / MB, "write_mb_s": 1 / MB}
    out = {
        f"disk_{k}": sum(figures[k].get(d, 0.0) for d in devices) * scale.get(k, 1.0)
        for k in ("read_iops", "write_iops", "read_mb_s", "write_mb_s")
    }
    out["disk_busy_percent"] = min(100.0, 100 * max(figures["busy"].get(d, 0.0) for d in devices))
    return out


def _network(prev: Series, now: Series, wall: float) -> dict[str, float]:
    rx = _rates(prev, now, "node_network_receive_bytes_total", "device", wall)
    tx = _rates(prev, now, "node_network_transmit_bytes_total", "device", wall)
    if not rx and not tx:
        return {}
    return {
        "net_rx_mb_s": sum(v for d, v in rx.items() if d != "lo") / MB,
        "net_tx_mb_s": sum(v for d, v in tx.items() if d != "lo") / MB,
    }
