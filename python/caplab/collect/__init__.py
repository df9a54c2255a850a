"""Resource collectors, sampled on the load's interval clock (see base.py for the interface).

Units: CPU in percent of one core (100 = one core busy); memory in MiB (``*_mb`` sizes, as top and
free report them); rates in decimal MB/s (10^6 bytes, as disks and links are rated).

The runner builds ``default_collectors(roles)``, calls ``start()`` just before the engine runs,
``sample(snapshot.end_s)`` from the engine's interval callback and ``stop()`` after the trial; a
failing collector costs its own figures, never the trial.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from caplab.collect.base import Collector, ResourceSample
from caplab.collect.disks import DiskCollector
from caplab.collect.generator import GeneratorCollector
from caplab.collect.host import HostCollector
from caplab.collect.network import NetworkCollector
from caplab.collect.proctable import ProcessTable
from caplab.collect.profile import ProfileCollector, ProfileSource
from caplab.collect.prometheus import MetricsSource, PrometheusCollector
from caplab.collect.roles import RoleCollector, RoleSpec
from caplab.collect.summary import cell_resources, summarize
from caplab.lazy import on_first_use

__all__ = [
    "Collector",
    "CollectorSet",
    "DiskCollector",
    "GeneratorCollector",
    "HostCollector",
    "MetricsSource",
    "NetworkCollector",
    "NodeExporterCollector",
    "PostgresCollector",
    "ProfileCollector",
    "ProfileSource",
    "PrometheusCollector",
    "ResourceSample",
    "RoleCollector",
    "RoleSpec",
    "cell_resources",
    "default_collectors",
    "summarize",
]

if TYPE_CHECKING:
    from caplab.collect.node_exporter import NodeExporterCollector
    from caplab.collect.postgres import PostgresCollector

log = logging.getLogger(__name__)

_WHERE = {
    "PostgresCollector": "caplab.collect.postgres",
    "NodeExporterCollector": "caplab.collect.node_exporter",
}
"""Collectors whose libraries load on first use (caplab/lazy.py: psycopg, the node_exporter's
parser): every `caplab load` imports this package, and they were 140 ms of its start-up."""


__getattr__ = on_first_use(__name__, _WHERE)


class CollectorSet:
    """Several collectors behind the one interface. A collector that raises is reported once (in
    ``errors`` and the log) and skipped where it has no baseline; the others carry on."""

    name = "collectors"

    def __init__(self, collectors: Iterable[Collector]) -> None:
        self.collectors = list(collectors)
        self.errors: dict[str, str] = {}
        """First failure of each collector that failed: name → ``"sample: OSError: …"``."""
        self._failures: dict[str, int] = {}
        self._unstarted: set[int] = set()

    @property
    def warnings(self) -> list[str]:
        """Everything the runner should show: collector failures and collectors' own warnings
        (a role that matched nothing, unreadable IO counters)."""
        out = [
            f"collector {name} failed {self._failures[name]} time(s); first: {error}"
            for name, error in self.errors.items()
        ]
        for c in self.collectors:
            warning = getattr(c, "warning", None)
            if isinstance(warning, str):
                out.append(warning)
        return out

    def missing_roles(self) -> list[str]:
        """The last trial's errors: each role that matched no process at any of its samples."""
        return [m for c in self.collectors if isinstance(c, RoleCollector) and (m := c.missing)]

    def start(self) -> None:
        self._unstarted = set()
        for i, c in enumerate(self.collectors):
            try:
                c.start()
            except Exception as e:
                self._unstarted.add(i)  # no baseline: its rates would be nonsense
                self._failed(c, "start", e)

    def sample(self, t: float) -> list[ResourceSample]:
        out: list[ResourceSample] = []
        for i, c in enumerate(self.collectors):
            if i in self._unstarted:
                continue
            try:
                out += c.sample(t)
            except Exception as e:
                self._failed(c, "sample", e)
        return out

    def stop(self) -> None:
        for c in self.collectors:
            try:
                c.stop()
            except Exception as e:
                self._failed(c, "stop", e)

    def _failed(self, c: Collector, phase: str, e: Exception) -> None:
        self._failures[c.name] = self._failures.get(c.name, 0) + 1
        if c.name not in self.errors:
            self.errors[c.name] = f"{phase}: {type(e).__name__}: {e}"
            log.warning("collector %s failed in %s: %r (its figures are missing)", c.name, phase, e)


def default_collectors(
    roles: Iterable[RoleSpec],
    metrics: MetricsSource | None = None,
    postgres: list[str] | None = None,
    hosts: dict[str, str] | None = None,
) -> CollectorSet:
    """Host, disks, network, the generator, one collector per SUT role (and per role's hardware
    profile), the SUT's own counters, given its nodes' URLs what PostgreSQL counts, and each remote
    host's node_exporter (``{name: url}``) with the roles placed on it."""
    from caplab.collect.node_exporter import NodeExporterCollector
    from caplab.collect.postgres import PostgresCollector

    roles = list(roles)
    base: list[Collector] = [HostCollector(), DiskCollector(), NetworkCollector(), GeneratorCollector()]
    app: list[Collector] = [PrometheusCollector(metrics)] if metrics is not None else []
    if postgres:
        app.append(PostgresCollector(postgres))
    remote = [
        NodeExporterCollector(name, url, [r.name for r in roles if r.host == name])
        for name, url in (hosts or {}).items()
    ]
    table = ProcessTable()  # one pass over /proc per sample, whatever the number of roles
    local = [RoleCollector(spec, table) for spec in roles if spec.host is None]
    profiles = [ProfileCollector(s.name, s.profile) for s in roles if s.profile is not None]
    return CollectorSet([*base, *local, *profiles, *remote, *app])
