"""The system's own counters, scraped from a Prometheus text endpoint, as scope ``app``.

Resource use says what a system spends; only the system can say what it *did*: a message bus
acknowledges a publish long before a host processes it, so the generator's throughput alone would
hide a growing backlog. The study names the series it wants and what to call them:

    metrics:
      url: http://127.0.0.1:7402/metrics
      rates: {processed_per_s: msgbus_documents_processed_total}   # counters → per second
      gauges: {queue_depth: msgbus_queue_depth}                     # gauges → their value

A series with labels is summed over them (``store="0"``, ``store="1"`` … → one figure).

``drain`` names a gauge of work still queued inside the system (``msgbus_queue_depth``): before
each trial the collector waits, bounded, until it is back down, so a backlog left by an
over-capacity trial is not worked off inside the next one (which would then read as keeping up
while it drained old work, and start with a queue the SLO never saw).
"""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from caplab.collect.base import ResourceSample

__all__ = ["MetricsSource", "PrometheusCollector", "parse_exposition", "scrape"]

SCOPE = "app"
TIMEOUT_S = 1.0
DRAIN_POLL_S = 0.1


@dataclass(frozen=True)
class MetricsSource:
    """Where to scrape and which series to keep: figure name → Prometheus series name."""

    url: str
    rates: dict[str, str] = field(default_factory=dict)
    gauges: dict[str, str] = field(default_factory=dict)
    drain: str | None = None
    """A gauge that must be at most ``drain_below`` before a trial starts."""
    drain_below: float = 0.0
    drain_timeout_s: float = 60.0


class ExpositionError(ValueError):
    """A line of the scraped text that is not Prometheus exposition format."""


def parse_exposition(text: str) -> dict[str, float]:
    """Series name → value, summed over label sets. Comments (``# TYPE``, ``# HELP``) are skipped;
    a timestamp after the value is ignored."""
    out: dict[str, float] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, rest = _split_name(line)
        parts = rest.split()
        if not name or not parts:
            raise ExpositionError(f"line {number}: {raw!r} is not `name{{labels}} value`")
        try:
            value = float(parts[0])
        except ValueError as e:
            raise ExpositionError(f"line {number}: {parts[0]!r} is not a number") from e
        if math.isfinite(value):
            out[name] = out.get(name, 0.0) + value
    return out


def _split_name(line: str) -> tuple[str, str]:
    """The series name and what follows its label set (if any)."""
    brace = line.find("{")
    space = line.find(" ")
    if brace != -1 and (space == -1 or brace < space):
        close = line.find("}", brace)
        if close == -1:
            return "", ""
        return line[:brace], line[close + 1 :]
    if space == -1:
        return line, ""
    return line[:space], line[space:]


class PrometheusCollector:
    """Scope ``app``: each named rate per second since the last scrape, each gauge as read."""

    name = "prometheus"

    def __init__(self, source: MetricsSource) -> None:
        self.source = source
        self._prev: dict[str, float] = {}
        self.sampled_at = 0.0
        """When the endpoint was last scraped (``time.monotonic()``): rates are per second of this
        clock, whatever time the caller gives a sample."""
        self.warning: str | None = None

    def start(self) -> None:
        self._prev = self._drained() if self.source.drain else self._scrape()
        self.sampled_at = time.monotonic()
        wanted = set(self.source.rates.values()) | set(self.source.gauges.values())
        missing = sorted(wanted - set(self._prev))
        self.warning = (
            f"metrics at {self.source.url} have no series {', '.join(missing)}" if missing else None
        )
        if self.source.drain and self._prev.get(self.source.drain, 0.0) > self.source.drain_below:
            left = self._prev[self.source.drain]
            self.warning = (
                f"{self.source.drain} still {left:g} after {self.source.drain_timeout_s:g}s: "
                "the trial started on a backlog"
            )

    def sample(self, t: float) -> list[ResourceSample]:
        values = self._scrape()
        now = time.monotonic()
        wall = max(now - self.sampled_at, 1e-9)
        out: list[ResourceSample] = []
        for figure, series in self.source.rates.items():
            if series in values and series in self._prev:
                # A counter that went down was reset (the system restarted): no rate this time.
                delta = values[series] - self._prev[series]
                if delta >= 0:
                    out.append(ResourceSample(t, SCOPE, figure, delta / wall))
        for figure, series in self.source.gauges.items():
            if series in values:
                out.append(ResourceSample(t, SCOPE, figure, values[series]))
        self._prev, self.sampled_at = values, now
        return out

    def stop(self) -> None:
        pass

    def _drained(self) -> dict[str, float]:
        """Scrapes until the drain gauge is low enough or the time is up; the last scrape."""
        assert self.source.drain is not None
        deadline = time.monotonic() + self.source.drain_timeout_s
        while True:
            values = self._scrape()
            level = values.get(self.source.drain)
            if level is None or level <= self.source.drain_below or time.monotonic() >= deadline:
                return values
            time.sleep(DRAIN_POLL_S)

    def _scrape(self) -> dict[str, float]:
        return scrape(self.source.url)


def scrape(url: str) -> dict[str, float]:
    """The endpoint's series once (summed over labels); OSError when it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as reply:
            text = reply.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise OSError(f"cannot scrape {url}: {reason}") from e
    return parse_exposition(text)
