"""A link bounds a system by its bandwidth or by its round trips, and the limit tells the two apart
from hand-made scopes: a link near its rate is a hardware limit (``link:ROLE``) whose evidence
also counts its round trips; a link nearly idle whose round trips × RTT fill most of the time per
message is ``network round trips``, with those figures; the same traffic over a short RTT leaves the
limit ``software``."""

from __future__ import annotations

import pytest

from caplab.analysis.limit import ROUND_TRIPS, find_limit, round_trips


def scopes(*, rtt_ms: float, rx_mb_s: float, packets_s: float) -> dict[str, dict[str, float]]:
    """An engine and its database across a 12.5 MB/s (100 Mbit) link, CPUs half idle."""
    return {
        "host": {"cores": 2.0, "cpu_percent": 60.0},
        "role:engine": {"cpu_percent": 30.0, "max_thread_cpu_percent": 20.0},
        "role:db": {"cpu_percent": 25.0, "max_thread_cpu_percent": 15.0},
        "link:db": {
            "rx_mb_s": rx_mb_s,
            "tx_mb_s": rx_mb_s / 3,
            "link_mb_s": 12.5,
            "rx_packets_s": packets_s,
            "tx_packets_s": packets_s * 1.5,
            "rtt_ms": rtt_ms,
        },
    }


def test_round_trips_filling_the_time_per_message_are_the_limit() -> None:
    """1,000 msg/s is 1 ms a message; 2 round trips of 0.4 ms are 0.8 ms of it: 80 %."""
    limit = find_limit(1000.0, scopes(rtt_ms=0.4, rx_mb_s=1.0, packets_s=2000.0), ["engine", "db"])
    assert limit["resource"] == ROUND_TRIPS and limit["kind"] == "software"
    assert limit["bound_rps"] == pytest.approx(1000.0 / 0.8), "round trips alone allow 1 / (k × RTT)"
    said = " ".join(limit["evidence"]["signals"])
    assert "2.00 round trips per message × RTT 0.400 ms = 0.800 ms" in said
    assert "against 1.000 ms measured per message" in said and "80%" in said
    assert limit["summary"].startswith("network round trips, not bandwidth")
    link = next(d for d in limit["evidence"]["demands"] if d["resource"] == "link:db")
    assert link["utilization"] == pytest.approx(0.08), "the bandwidth nearly idle: 1 of 12.5 MB/s"


def test_a_link_at_its_rate_is_a_bandwidth_limit_with_its_round_trips_beside() -> None:
    limit = find_limit(1000.0, scopes(rtt_ms=0.4, rx_mb_s=12.0, packets_s=2000.0), ["engine", "db"])
    assert limit["kind"] == "hardware" and limit["resource"] == "link:db"
    assert limit["utilization"] == pytest.approx(0.96)
    assert any("round trips per message" in s for s in limit["evidence"]["signals"])


def test_short_round_trips_leave_the_limit_in_the_software() -> None:
    """The same 2 round trips a message over a 0.05 ms RTT are 10 % of the time per message."""
    limit = find_limit(1000.0, scopes(rtt_ms=0.05, rx_mb_s=1.0, packets_s=2000.0), ["engine", "db"])
    assert limit["resource"] == "software"
    assert any("10% of it waiting on the network" in s for s in limit["evidence"]["signals"])


def test_round_trips_need_a_measured_rtt_and_packets_both_ways() -> None:
    no_rtt = scopes(rtt_ms=0.4, rx_mb_s=1.0, packets_s=2000.0)
    del no_rtt["link:db"]["rtt_ms"]
    assert round_trips(1000.0, no_rtt) == []
    one_way = scopes(rtt_ms=0.4, rx_mb_s=1.0, packets_s=2000.0)
    one_way["link:db"]["tx_packets_s"] = 0.0
    assert round_trips(1000.0, one_way) == []
    assert round_trips(0.0, scopes(rtt_ms=0.4, rx_mb_s=1.0, packets_s=2000.0)) == []
    [trips] = round_trips(500.0, scopes(rtt_ms=0.4, rx_mb_s=1.0, packets_s=2000.0))
    assert trips.per_message == pytest.approx(4.0), "the smaller direction: 2,000 packets/s over 500/s"
