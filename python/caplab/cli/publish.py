"""caplab's own figures, served live in Prometheus format (``--metrics-port``), so a Grafana
dashboard can show the load beside the system's: requests sent, completed, failed and dropped
(counters), and each interval's throughput, offered rate, latency percentiles and requests in
flight (gauges), plus the resource figures sampled with it (``caplab_resource{scope,metric}``).

Served by the Prometheus client library's own HTTP server on a registry of its own, for as long as
the run lasts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from caplab.engine import IntervalSnapshot, OpenLoad, Plan

if TYPE_CHECKING:
    from caplab.collect.base import ResourceSample

PERCENTILES = {"p50": "0.5", "p90": "0.9", "p99": "0.99", "max": "1"}


class IntervalPublisher:
    """Holds the latest interval's figures for the scraper; counters add every interval's counts."""

    def __init__(self, port: int, address: str = "127.0.0.1") -> None:
        # Imported here: every `caplab load` imports this module, few publish (40 ms of start-up).
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = CollectorRegistry()
        r = self.registry
        self.sent = Counter("caplab_requests_sent", "Requests sent (warm-up included)", registry=r)
        self.completed = Counter("caplab_requests_completed", "Requests answered successfully", registry=r)
        self.errors = Counter("caplab_requests_failed", "Requests that failed", registry=r)
        self.dropped = Counter(
            "caplab_requests_dropped", "Open-model sends over the in-flight cap", registry=r
        )
        self.throughput = Gauge("caplab_throughput", "Completions per second, last interval", registry=r)
        self.offered = Gauge("caplab_offered_rate", "Offered requests per second (open model)", registry=r)
        self.in_flight = Gauge("caplab_in_flight", "Requests in flight at the interval's end", registry=r)
        self.warmup = Gauge("caplab_warmup", "1 while the load warms up (not measured)", registry=r)
        self.latency = Gauge(
            "caplab_latency_ms",
            "Latency from the intended send time, last interval",
            ["quantile"],
            registry=r,
        )
        self.resource = Gauge(
            "caplab_resource", "Resource figures sampled with the interval", ["scope", "metric"], registry=r
        )
        self.server: Any = None
        self.port = port
        self.address = address

    def start(self) -> None:
        """Starts serving; raises OSError when the port cannot be had."""
        from prometheus_client import start_http_server

        self.server, _ = start_http_server(self.port, self.address, registry=self.registry)

    def update(
        self, s: IntervalSnapshot, offered: float | None = None, samples: list[ResourceSample] | None = None
    ) -> None:
        self.sent.inc(s.sent)
        self.completed.inc(s.completed)
        self.errors.inc(s.errors)
        self.dropped.inc(s.dropped)
        self.throughput.set(s.throughput)
        self.in_flight.set(s.in_flight)
        self.warmup.set(1.0 if s.warmup else 0.0)
        if offered is not None:
            self.offered.set(offered)
        for name, quantile in PERCENTILES.items():
            value = getattr(s.latency_ms, name, None)
            if value is not None:
                self.latency.labels(quantile).set(value)
        for sample in samples or []:
            self.resource.labels(sample.scope, sample.metric).set(sample.value)

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


class PublishingObserver:
    """A study's observer that also publishes each interval: wraps the terminal's."""

    def __init__(self, inner: Any, publisher: IntervalPublisher) -> None:
        self.inner = inner
        self.publisher = publisher
        self.offered: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None:
        self.offered = plan.load.profile[0].rate_start if isinstance(plan.load, OpenLoad) else None
        self.inner.trial_started(index, repeat, plan)

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None:
        self.publisher.update(s, self.offered, samples)
        self.inner.interval(s, samples)
