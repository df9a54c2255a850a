"""A role's hardware profile as the kernel counts it: the CPU quota it runs under and how often it
was throttled, its memory against the limit (with limit hits and OOM kills), and each of its
volumes' IO — read from the role's cgroups and loop devices through a callable, so this package
needs nothing of how the profile was applied.

Scopes: ``role:NAME`` gains ``quota_cpus`` (host CPUs the quota grants), ``cpu_throttled_percent``
(share of quota periods that ran out), ``mem_used_mb``, ``mem_peak_mb``, ``mem_limit_mb``,
``mem_percent`` (of the limit), ``mem_limit_hits``, ``mem_major_faults`` (pages read back from
disk: the kernel reclaimed the role's own file pages to stay under its limit) and ``oom_kills``
(counted since the trial started); ``volume:LABEL`` gets the disk figures of ``disk:DEV`` under
the volume's own name, and ``throttle_percent``: its busiest figure against its class's ceiling;
``link:ROLE`` (a role with a link) gets ``rx_mb_s``/``tx_mb_s`` as the role receives and sends
them, packets, ``dropped_s``, ``link_mb_s``, the shaped rate of its class — not the veth's
nominal 10 Gbit/s, which says nothing — and ``rtt_ms``, its round-trip time probed at the sample.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from caplab.collect.base import ResourceSample
from caplab.collect.disks import DiskCounters, disk_rates

__all__ = ["ProfileCollector", "ProfileSource", "RoleUsage"]

MIB = 1024 * 1024
MB = 1_000_000
Counted = Mapping[str, int | float | str]
"""One of a role's counter groups (``cpu``, ``memory``, ``link``, ``volume:NAME``) by counter."""
RoleUsage = Mapping[str, Counted]
"""``{"cpu": {…}, "memory": {…}, "volume:data": {…}}``: what the kernel counted for one role."""
Figure = tuple[str, str, float]
"""A sample's scope, metric and value, before the caller's time is put on it."""


@dataclass(frozen=True)
class ProfileSource:
    """Where a role's profile figures come from: ``usage`` reads them now; ``volume_labels`` maps
    each of the role's volumes to the name its figures are stored under (``data``, or ``db.data``
    when two roles have a volume of that name)."""

    usage: Callable[[], RoleUsage]
    volume_labels: Mapping[str, str] = field(default_factory=dict)
    volume_limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Each volume's throttle ceilings by figure (``write_iops``, ``write_mb_s`` …): a throttled
    request waits before the device, so busy % alone never shows a volume at its ceiling."""
    machine: str | None = None
    """The machine the role shares with other roles (one combined server: one quota for all), or
    None when the profile is the role's own; an SLO on several roles' CPU counts a quota once."""


def _counters(u: Mapping[str, int | float | str]) -> DiskCounters:
    def n(key: str) -> int:
        value = u.get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    return DiskCounters(
        reads=n("reads"),
        read_sectors=n("read_sectors"),
        read_ms=n("read_ms"),
        writes=n("writes"),
        write_sectors=n("write_sectors"),
        write_ms=n("write_ms"),
        io_ms=n("io_ms"),
        weighted_ms=n("queue_ms"),
    )


def _num(u: Mapping[str, int | float | str], key: str) -> float:
    value = u.get(key, 0)
    return float(value) if isinstance(value, int | float) else 0.0


class ProfileCollector:
    """One role's profile figures, sampled on the load's clock."""

    def __init__(self, role: str, source: ProfileSource) -> None:
        self.role = role
        self.source = source
        self.name = f"profile:{role}"
        self._start: RoleUsage = {}
        self._prev: RoleUsage = {}
        self.sampled_at = 0.0
        """When the counters were last read (``time.monotonic()``): rates are per second of this clock,
        whatever time the caller gives a sample."""

    def start(self) -> None:
        self._start = self._prev = self.source.usage()
        self.sampled_at = time.monotonic()

    def sample(self, t: float) -> list[ResourceSample]:
        now = self.source.usage()
        now_t = time.monotonic()
        wall = now_t - self.sampled_at
        scope = f"role:{self.role}"
        figures = [
            *self._cpu(scope, now.get("cpu"), self._prev.get("cpu")),
            *self._memory(scope, now.get("memory"), self._start.get("memory") or {}),
            *self._link(now.get("link"), self._prev.get("link"), wall),
            *self._volumes(now, wall),
        ]
        self._prev, self.sampled_at = now, now_t
        return [ResourceSample(t, where, metric, value) for where, metric, value in figures]

    def _cpu(self, scope: str, cpu: Counted | None, before: Counted | None) -> list[Figure]:
        """The quota in host CPUs, and the share of quota periods since the last sample that ran out."""
        if cpu is None:
            return []
        out = [(scope, "quota_cpus", _num(cpu, "quota_host_cpus"))]
        if before is not None:
            periods = _num(cpu, "periods") - _num(before, "periods")
            throttled = _num(cpu, "throttled_periods") - _num(before, "throttled_periods")
            if periods > 0:
                out.append((scope, "cpu_throttled_percent", 100.0 * max(0.0, throttled) / periods))
        return out

    def _memory(self, scope: str, memory: Counted | None, first: Counted) -> list[Figure]:
        """Memory used against the limit; limit hits, major faults and OOM kills since the trial
        started (``first``), since the kernel's counters run from the cgroup's creation."""
        if memory is None:
            return []
        used, limit = _num(memory, "usage_bytes"), _num(memory, "limit_bytes")
        out = [
            (scope, "mem_used_mb", used / MIB),
            (scope, "mem_peak_mb", _num(memory, "peak_bytes") / MIB),
        ]
        if limit > 0:
            out += [(scope, "mem_limit_mb", limit / MIB), (scope, "mem_percent", 100.0 * used / limit)]
        out += [
            (scope, "mem_limit_hits", _num(memory, "limit_hits") - _num(first, "limit_hits")),
            (scope, "mem_major_faults", _num(memory, "major_faults") - _num(first, "major_faults")),
            (scope, "oom_kills", _num(memory, "oom_kills") - _num(first, "oom_kills")),
        ]
        return out

    def _link(self, link: Counted | None, before: Counted | None, wall: float) -> list[Figure]:
        """The role's traffic as it receives and sends it, its class's shaped rate and the round trip."""
        if link is None or before is None or wall <= 0:
            return []
        where = f"link:{self.role}"
        out = [
            (where, metric, max(0.0, _num(link, counter) - _num(before, counter)) / unit / wall)
            for metric, counter, unit in (
                ("rx_mb_s", "received_bytes", MB),
                ("tx_mb_s", "sent_bytes", MB),
                ("rx_packets_s", "received_packets", 1.0),
                ("tx_packets_s", "sent_packets", 1.0),
                ("dropped_s", "dropped", 1.0),
            )
        ]
        out.append((where, "link_mb_s", _num(link, "rate_bits") / 8 / MB))
        if "rtt_ms" in link:  # probed now: a SYN answered across the link
            out.append((where, "rtt_ms", _num(link, "rtt_ms")))
        return out

    def _volumes(self, now: RoleUsage, wall: float) -> list[Figure]:
        """Each volume and device model seen at both samples, under its label: a device's figures
        are a volume's (its loop device's counters), so the limit analysis weighs both alike."""
        out: list[Figure] = []
        for key, volume in now.items():
            if not key.startswith(("volume:", "device:")) or key not in self._prev:
                continue
            name = key.split(":", 1)[1]
            label = self.source.volume_labels.get(name, name)
            rates = self._volume_rates(name, self._prev[key], volume, wall)
            out += [(f"volume:{label}", metric, value) for metric, value in rates.items()]
        return out

    def _volume_rates(self, name: str, before: Counted, volume: Counted, wall: float) -> dict[str, float]:
        """A volume's disk rates, its flushes, and its busiest figure against its throttle ceiling."""
        rates = disk_rates(_counters(before), _counters(volume), wall)
        if "flushes" in volume and wall > 0:
            # An fsync's cache flush is a request of its own: the throttle counts it as a write.
            flushes = max(0.0, _num(volume, "flushes") - _num(before, "flushes"))
            rates["flush_iops"] = flushes / wall
        counted = rates | {"write_iops": rates["write_iops"] + rates.get("flush_iops", 0.0)}
        ceilings = self.source.volume_limits.get(name, {})
        shares = [counted[k] / limit for k, limit in ceilings.items() if k in counted and limit > 0]
        if shares:
            rates["throttle_percent"] = 100.0 * max(shares)
        return rates

    def stop(self) -> None:
        self._prev = self._start = {}
