"""Dashboards for caplab's live figures (``--metrics-port``): a Grafana dashboard over what the
Prometheus endpoint serves, and the scrape configuration that feeds it. Shipped in the package so
that `caplab dashboard` prints them from an installed wheel."""

from __future__ import annotations

from importlib import resources

GRAFANA = "grafana.json"


def grafana_dashboard() -> str:
    """The Grafana dashboard, as JSON to import (Dashboards → New → Import)."""
    return resources.files(__name__).joinpath(GRAFANA).read_text()


def prometheus_scrape(port: int, interval_s: float = 5.0) -> str:
    """A Prometheus scrape configuration for a caplab serving on 127.0.0.1:``port``."""
    return (
        "scrape_configs:\n"
        "  - job_name: caplab\n"
        f"    scrape_interval: {interval_s:g}s\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n"
    )
