"""A resource's name parses into its kind and formats back to the very string stored, and a limit
is classified once, by the analysis, from what the finder stores: a role's CPU, its one busy
thread, the host's CPU, a volume, a link's bandwidth or its round trips, memory, software, the
generator — and a document stored before the classification existed classifies the same."""

from __future__ import annotations

import json

import pytest

from caplab.analysis.generator import generator_limit
from caplab.analysis.limit import ROUND_TRIPS, Limit, find_limit, same_resource
from caplab.analysis.limit_kind import LimitKind
from caplab.analysis.scope import HOST_CPU, ResourceScope, ScopeKind


@pytest.mark.parametrize("kind", list(ScopeKind))
@pytest.mark.parametrize("name", ["host", "transport+access", "db/log", "10.0.0.2:5432", "0"])
def test_every_kind_of_scope_formats_back_to_the_string_it_came_from(kind: ScopeKind, name: str) -> None:
    text = f"{kind.value}:{name}"
    scope = ResourceScope.parse(text)
    assert (scope.kind, scope.name) == (kind, name)
    assert scope.format() == str(scope) == text
    assert ResourceScope.parse(scope.format()) == scope


@pytest.mark.parametrize("text", ["host", "generator", ROUND_TRIPS, "software", "gpu:0", "cpu:", ":db", ""])
def test_a_name_that_is_no_scope_does_not_parse(text: str) -> None:
    with pytest.raises(ValueError, match="not a resource scope"):
        ResourceScope.parse(text)
    assert ResourceScope.of(text) is None


def test_roles_on_one_machine_are_one_scope_in_any_order() -> None:
    a, b = ResourceScope.parse("cpu:transport+access"), ResourceScope.parse("cpu:access+transport")
    assert a.same_as(b) and a != b, "the same machine; the stored names still differ"
    assert not a.same_as(ResourceScope.parse("memory:transport+access"))
    assert same_resource("cpu:transport+access", "cpu:access+transport")
    assert same_resource(ROUND_TRIPS, ROUND_TRIPS) and not same_resource(ROUND_TRIPS, "cpu:host")


def test_storage_and_network_scopes_say_so() -> None:
    assert ResourceScope.parse("volume:log").is_storage and ResourceScope.parse("disk:sda").is_storage
    assert ResourceScope.parse("link:db").is_network and ResourceScope.parse("net:eth0").is_network
    assert not HOST_CPU.is_storage and not HOST_CPU.is_network


def test_a_cpu_bound_role_is_a_cpu_limit() -> None:
    scopes = {"host": {"cores": 4.0}, "role:app": {"cpu_percent": 380.0, "max_thread_cpu_percent": 60.0}}
    assert LimitKind.of(find_limit(950.0, scopes, ["app"])) == LimitKind.CPU


def test_one_busy_thread_is_a_thread_limit_not_the_cores() -> None:
    scopes = {
        "host": {"cores": 8.0, "cpu_percent": 120.0},
        "role:server": {"cpu_percent": 101.0, "max_thread_cpu_percent": 98.0},
    }
    limit = find_limit(480.0, scopes, ["server"])
    assert LimitKind.of(limit) == LimitKind.CPU_THREAD
    assert LimitKind.CPU_THREAD.is_cpu and LimitKind.CPU_THREAD.is_hardware


def test_the_hosts_cpu_is_a_host_cpu_limit() -> None:
    scopes = {"host": {"cores": 2.0, "cpu_percent": 190.0}, "role:app": {"cpu_percent": 40.0}}
    limit = find_limit(500.0, scopes, ["app"])
    assert limit["resource"] == HOST_CPU.format()
    assert LimitKind.of(limit) == LimitKind.HOST_CPU


def test_a_throttled_volume_the_host_waits_on_is_a_storage_limit() -> None:
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 2.0, "iowait_percent": 99.0},
        "role:writer": {"cpu_percent": 1.0},
        "volume:log": {"write_iops": 20.0, "flush_iops": 9.0, "busy_percent": 0.1, "throttle_percent": 72.0},
    }
    limit = find_limit(7.0, scopes, ["writer"])
    assert LimitKind.of(limit) == LimitKind.STORAGE
    assert ResourceScope.parse(str(limit["resource"])) == ResourceScope(ScopeKind.VOLUME, "log")


def link(*, rtt_ms: float, rx_mb_s: float) -> dict[str, dict[str, float]]:
    """An engine and its database across a 12.5 MB/s link, 2,000 packets a second, CPUs half idle."""
    return {
        "host": {"cores": 2.0, "cpu_percent": 60.0},
        "role:engine": {"cpu_percent": 30.0, "max_thread_cpu_percent": 20.0},
        "role:db": {"cpu_percent": 25.0, "max_thread_cpu_percent": 15.0},
        "link:db": {
            "rx_mb_s": rx_mb_s,
            "tx_mb_s": rx_mb_s / 3,
            "link_mb_s": 12.5,
            "rx_packets_s": 2000.0,
            "tx_packets_s": 3000.0,
            "rtt_ms": rtt_ms,
        },
    }


def test_round_trips_filling_the_time_per_message_are_a_round_trip_limit() -> None:
    limit = find_limit(1000.0, link(rtt_ms=0.4, rx_mb_s=1.0), ["engine", "db"])
    assert limit["kind"] == "software", "stored as before"
    assert LimitKind.of(limit) == LimitKind.NETWORK_ROUND_TRIPS
    assert not LimitKind.NETWORK_ROUND_TRIPS.is_hardware


def test_a_link_at_its_rate_is_a_bandwidth_limit() -> None:
    limit = find_limit(1000.0, link(rtt_ms=0.4, rx_mb_s=12.0), ["engine", "db"])
    assert LimitKind.of(limit) == LimitKind.NETWORK_BANDWIDTH


def test_short_round_trips_leave_a_software_limit() -> None:
    limit = find_limit(1000.0, link(rtt_ms=0.05, rx_mb_s=1.0), ["engine", "db"])
    assert LimitKind.of(limit) == LimitKind.SOFTWARE


def test_memory_the_generator_and_no_role_are_their_own_kinds() -> None:
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 100.0},
        "role:db": {"cpu_percent": 95.0, "quota_cpus": 1.0, "mem_percent": 97.0, "mem_limit_hits": 12.0},
    }
    assert LimitKind.of(find_limit(200.0, scopes, ["db"])) == LimitKind.MEMORY
    assert LimitKind.of(find_limit(200.0, scopes, [])) == LimitKind.UNKNOWN
    assert LimitKind.of(generator_limit(900.0, "/s", "late sends")) == LimitKind.GENERATOR


def test_a_limit_read_back_from_a_stored_document_classifies_the_same() -> None:
    """results.json holds the limit as the finder returned it, nothing more: read back, it is the
    same kind; a fixed load's unreached limit is its own kind, its busiest resource still a CPU."""
    scopes = {
        "host": {"cores": 8.0, "cpu_percent": 120.0},
        "role:server": {"cpu_percent": 101.0, "max_thread_cpu_percent": 98.0},
    }
    found = find_limit(480.0, scopes, ["server"])
    stored: Limit = json.loads(json.dumps(found))
    assert set(stored) == {"resource", "kind", "utilization", "bound_rps", "evidence", "summary"}
    assert LimitKind.of(stored) == LimitKind.of(found) == LimitKind.CPU_THREAD
    unreached: Limit = {**stored, "kind": "not reached"}
    assert LimitKind.of(unreached) == LimitKind.NOT_REACHED
    assert LimitKind.of_resource(unreached["resource"]) == LimitKind.CPU
    assert LimitKind.of_resource(ROUND_TRIPS) == LimitKind.NETWORK_ROUND_TRIPS
    assert LimitKind.of_resource("software") is None
