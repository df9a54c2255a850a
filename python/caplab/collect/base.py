"""The collector interface: every resource sampler starts, samples on the load's clock, stops.

Samples are long-format rows (time, scope, metric, value) so that one table holds every kind of
resource and new collectors need no schema change. ``t`` is seconds since the trial started, taken
from the engine's interval clock, so each interval has load and resources side by side.

Scopes: ``host``, ``cpu:N`` (one core), ``role:NAME`` (a SUT process group), ``disk:DEV``,
``net:IFACE``, ``generator`` (caplab's own process). Metrics are named with their unit:
``cpu_percent`` (100 = one core), ``rss_mb``, ``read_mb_s``, ``busy_percent``, ``rx_mb_s`` …
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ResourceSample:
    t: float
    scope: str
    metric: str
    value: float


class Collector(Protocol):
    """One source of resource figures. Rates are computed over the time since the last sample."""

    name: str

    def start(self) -> None:
        """Takes the baseline reading; called just before the trial's load starts."""

    def sample(self, t: float) -> list[ResourceSample]:
        """Returns the figures for the interval ending at ``t`` (seconds since trial start)."""

    def stop(self) -> None:
        """Releases anything held; called once after the trial."""
