"""The SUT's own counters: parsed from Prometheus text, turned into rates over the load's clock,
checked against a real knownserver whose request count is known."""

from __future__ import annotations

import http.server
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from caplab.collect.prometheus import ExpositionError, MetricsSource, PrometheusCollector, parse_exposition
from caplab.engine import OpenLoad, Plan, Target, run
from support.servers import KnownServer


def test_exposition_sums_label_sets_and_skips_comments() -> None:
    text = (
        "# HELP depth Messages waiting.\n"
        "# TYPE depth gauge\n"
        'depth{store="0"} 3\n'
        'depth{store="1",kind="a b"} 4.5\n'
        "received_total 120 1700000000000\n"
        "\n"
        "weird NaN\n"
    )
    assert parse_exposition(text) == {"depth": 7.5, "received_total": 120.0}


@pytest.mark.parametrize("text", ["depth", 'depth{store="0" 3', "depth three"])
def test_exposition_rejects_lines_that_are_not_name_and_value(text: str) -> None:
    with pytest.raises(ExpositionError, match="line 1"):
        parse_exposition(text)


@pytest.mark.slow
def test_rates_follow_the_servers_own_count(known_server: KnownServer) -> None:
    server = known_server()
    base = f"http://{server.address}"
    collector = PrometheusCollector(
        MetricsSource(
            f"{base}/metrics",
            rates={"served_per_s": "knownserver_requests_total"},
            gauges={"served": "knownserver_requests_total"},
        )
    )
    collector.start()
    assert collector.warning is None
    first_scrape = collector.sampled_at
    result = run(Plan(Target(f"{base}/"), OpenLoad.constant(200, 1.0), duration_s=1.0))
    samples = {s.metric: s for s in collector.sample(result.duration_s)}
    collector.stop()
    assert result.completed == 200
    assert samples["served"].value == 200  # the gauge reads the counter as it stands
    # The server's 200 requests over the collector's own clock between its two scrapes, which
    # spans the run (so the rate is at most the offered 200/s), not over the caller's time.
    between = collector.sampled_at - first_scrape
    assert between >= result.duration_s
    assert samples["served_per_s"].value == pytest.approx(200 / between)
    assert all(s.scope == "app" for s in samples.values())


def test_a_series_the_server_does_not_have_is_a_warning(known_server: KnownServer) -> None:
    server = known_server()
    collector = PrometheusCollector(
        MetricsSource(f"http://{server.address}/metrics", rates={"x_per_s": "no_such_total"})
    )
    collector.start()
    assert collector.warning is not None and "no_such_total" in collector.warning
    assert collector.sample(1.0) == []


def test_an_endpoint_that_is_down_raises_for_the_collector_set_to_report(closed_port: int) -> None:
    collector = PrometheusCollector(
        MetricsSource(f"http://127.0.0.1:{closed_port}/metrics", gauges={"d": "depth"})
    )
    with pytest.raises(OSError, match="cannot scrape"):
        collector.start()


def test_knownserver_metrics_do_not_count_themselves(known_server: KnownServer) -> None:
    server = known_server()
    for _ in range(3):
        with urllib.request.urlopen(f"http://{server.address}/metrics", timeout=5) as reply:
            values = parse_exposition(reply.read().decode())
    assert values == {"knownserver_requests_total": 0.0}


class _Draining(http.server.BaseHTTPRequestHandler):
    """A system whose queue shrinks by one at each scrape, from `start` down to 0 (or stays)."""

    level = 0.0
    step = 1.0
    scrapes = 0

    def do_GET(self) -> None:
        cls = type(self)
        cls.scrapes += 1
        body = f"# TYPE depth gauge\ndepth {cls.level}\n".encode()
        cls.level = max(0.0, cls.level - cls.step)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def draining() -> Iterator[tuple[str, type[_Draining]]]:
    handler = type("Handler", (_Draining,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics", handler
    server.shutdown()
    server.server_close()


def test_a_trial_waits_for_the_backlog_to_drain(draining: tuple[str, type[_Draining]]) -> None:
    url, handler = draining
    handler.level = 5.0
    collector = PrometheusCollector(MetricsSource(url, gauges={"depth": "depth"}, drain="depth"))
    collector.start()
    assert handler.scrapes == 6, "scraped until the queue read 0"
    assert collector.warning is None
    assert collector._prev["depth"] == 0.0


def test_a_backlog_that_does_not_drain_in_time_is_a_warning(draining: tuple[str, type[_Draining]]) -> None:
    url, handler = draining
    handler.level, handler.step = 100.0, 0.0
    collector = PrometheusCollector(
        MetricsSource(url, gauges={"depth": "depth"}, drain="depth", drain_below=10, drain_timeout_s=0.3)
    )
    began = time.monotonic()
    collector.start()
    assert time.monotonic() - began >= 0.3, "it waited the whole drain timeout before giving up"
    assert collector.warning is not None and "still 100 after 0.3s" in collector.warning
