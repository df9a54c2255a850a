"""From resource samples to the figures of one cell: means over the measured window.

``summarize`` is the general form (every scope and metric); ``cell_resources`` is the compact shape
the runner stores per cell and the analysis reads: one entry per role, the host with its disks and
interfaces folded in, and the generator.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from caplab.collect.base import ResourceSample

__all__ = ["cell_resources", "summarize"]

STACKED_PREFIXES = ("dm-", "md", "drbd", "bcache")
"""Devices built on other block devices: their IO is already counted on the disks beneath."""
# Interval ends are taken a little after the boundary; a sample that late still belongs to it.
WINDOW_SLACK_S = 0.05
MIN_SPAN_S = 1e-3
"""A floor on a sample's weight, so samples given at one instant still count."""
HOST_METRICS = ("cpu_percent", "cpu_util_percent", "iowait_percent", "mem_used_mb", "load1")


def summarize(
    samples: Iterable[ResourceSample], t_from: float | None = None, t_to: float | None = None
) -> dict[str, dict[str, float]]:
    """Time-weighted mean of each scope's metrics over the samples with ``t_from < t <= t_to``
    (unbounded when None): the warm-up's end leaves the warm-up out, the window's end the drain
    after it (whose near-idle sample would pull every mean down).

    Each sample covers the time since the one before it in its series (a series restarts at 0
    with each trial), so a short sample taken just after an interval's end — the trial's last,
    a few ms into the drain — weighs its few ms, not as much as a whole interval."""
    sums: dict[tuple[str, str], float] = defaultdict(float)
    spans: dict[tuple[str, str], float] = defaultdict(float)
    previous: dict[tuple[str, str], float] = {}
    for s in samples:
        key = (s.scope, s.metric)
        before = previous.get(key, 0.0)
        span = s.t - before if s.t > before else s.t  # t went back: the next trial's samples
        previous[key] = s.t
        if (t_from is None or s.t > t_from) and (t_to is None or s.t <= t_to + WINDOW_SLACK_S):
            weight = max(span, MIN_SPAN_S)
            sums[key] += s.value * weight
            spans[key] += weight
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (scope, metric), total in sums.items():
        out[scope][metric] = total / spans[(scope, metric)]
    return dict(out)


def cell_resources(
    samples: Iterable[ResourceSample], t_from: float | None = None, t_to: float | None = None
) -> dict[str, dict[str, float]]:
    """``{ROLE: {…role metrics}, "host": {…}, "generator": {…}, "app": {…}, "volume:NAME": {…}}``,
        means over ``t > t_from``; ``app`` holds the SUT's own counters (collect/prometheus.py) when it
        has any, ``volume:NAME`` each hardware profile's volume and ``link:ROLE`` each role's link
    (collect/profile.py).

        Host keys: cpu_percent, cpu_util_percent, iowait_percent, mem_used_mb, load1 (from the host
        scope); mem_percent (in use — total − available — of the host's total); disk_busy_percent
        and disk_avg_queue (the busiest disk's, since one saturated disk limits the system however
        idle the others are); disk_read_mb_s, disk_write_mb_s,
        disk_read_iops, disk_write_iops (sums over disks, stacked devices left out unless there is
        nothing else); net_rx_mb_s, net_tx_mb_s (sums over interfaces and links, loopback included). A key is
        present only when its source was sampled, so a missing collector never reads as zero use.
    """
    means = summarize(samples, t_from, t_to)
    out: dict[str, dict[str, float]] = {}
    for scope, metrics in means.items():
        if scope.startswith("role:"):
            out[scope.removeprefix("role:")] = dict(metrics)
    for scope in ("generator", "app"):
        if scope in means:
            out[scope] = dict(means[scope])
    for scope, metrics in means.items():
        if scope.startswith(
            ("volume:", "link:", "pg:", "pgdb:", "node:")
        ):  # volumes, links, PostgreSQL, hosts
            out[scope] = dict(metrics)

    host = _host_figures(means)
    if host:
        out["host"] = host
    return out


def _host_figures(means: dict[str, dict[str, float]]) -> dict[str, float]:
    """The host scope's own figures with its disks and interfaces folded in (see ``cell_resources``)."""
    host: dict[str, float] = {k: v for k, v in means.get("host", {}).items() if k in HOST_METRICS}
    total_mb = means.get("host", {}).get("mem_total_mb")
    if "mem_used_mb" in host and total_mb:
        host["mem_percent"] = 100.0 * host["mem_used_mb"] / total_mb
    host |= _disk_figures(means)
    nets = [m for scope, m in means.items() if scope.startswith(("net:", "link:"))]
    if nets:
        host["net_rx_mb_s"] = sum(m.get("rx_mb_s", 0.0) for m in nets)
        host["net_tx_mb_s"] = sum(m.get("tx_mb_s", 0.0) for m in nets)
    return host


def _disk_figures(means: dict[str, dict[str, float]]) -> dict[str, float]:
    """The busiest disk's busy % and queue (one saturated disk limits the system), and the traffic
    summed over the physical disks (over every disk when there are only stacked devices)."""
    disks = {scope.removeprefix("disk:"): m for scope, m in means.items() if scope.startswith("disk:")}
    if not disks:
        return {}
    figures = {
        "disk_busy_percent": max(m.get("busy_percent", 0.0) for m in disks.values()),
        "disk_avg_queue": max(m.get("avg_queue", 0.0) for m in disks.values()),
    }
    physical = [m for name, m in disks.items() if not name.startswith(STACKED_PREFIXES)]
    counted = physical or list(disks.values())
    for metric in ("read_mb_s", "write_mb_s", "read_iops", "write_iops"):
        figures[f"disk_{metric}"] = sum(m.get(metric, 0.0) for m in counted)
    return figures
