"""`caplab dashboard`: the Grafana dashboard for caplab's live figures (``--metrics-port``), or the
Prometheus scrape configuration that feeds it, printed for a file or a pipe."""

from __future__ import annotations

import click

from caplab.dashboards import grafana_dashboard, prometheus_scrape


@click.command("dashboard")
@click.option(
    "--prometheus",
    "port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Print a Prometheus scrape configuration for caplab serving on 127.0.0.1:PORT instead.",
)
def dashboard_command(port: int | None) -> None:
    """Print the Grafana dashboard (JSON to import) over what --metrics-port serves.

    \b
      caplab dashboard > caplab-dashboard.json          Grafana: Dashboards → New → Import
      caplab dashboard --prometheus 9464 > scrape.yml   then: caplab run study.yaml --metrics-port 9464
    """
    click.echo(prometheus_scrape(port) if port is not None else grafana_dashboard(), nl=False)
