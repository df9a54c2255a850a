"""The limit at capacity from hand-made resource scopes: a saturated CPU or disk is a hardware
limit (with its service demand and the bound it sets), a single busy thread counts as a whole core,
nothing busy is a software limit with its evidence, and no SUT role means the limit is unknown."""

from __future__ import annotations

import pytest

from caplab.analysis.limit import demands, find_limit
from caplab.analysis.limit_kind import LimitKind

KEYS = {"resource", "kind", "utilization", "bound_rps", "evidence", "summary"}


def test_cpu_bound_role_is_a_hardware_limit_with_its_demand() -> None:
    scopes = {"host": {"cores": 4.0}, "role:app": {"cpu_percent": 380.0, "max_thread_cpu_percent": 60.0}}
    limit = find_limit(950.0, scopes, ["app"])
    assert set(limit) == KEYS
    assert limit["kind"] == "hardware"
    assert limit["resource"] == "cpu:app"
    assert limit["utilization"] == pytest.approx(0.95)
    assert limit["bound_rps"] == pytest.approx(1000.0), "X / U: 950/s at 95 % bounds near 1000/s"
    top = limit["evidence"]["demands"][0]
    assert top["demand_ms"] == pytest.approx(1.0), "U / X: 0.95 / 950/s is 1 ms of CPU per request"
    assert "cpu:app at 95%" in limit["summary"]


def test_the_host_cpu_shared_with_the_sut_is_a_cpu_limit() -> None:
    """With the SUT using nearly all of the host, the top demand is a CPU either way."""
    scopes = {"host": {"cores": 4.0, "cpu_percent": 390.0}, "role:app": {"cpu_percent": 370.0}}
    limit = find_limit(950.0, scopes, ["app"])
    assert limit["kind"] == "hardware"
    assert limit["resource"] in ("cpu:app", "cpu:host")


def test_a_host_cpu_the_generator_shared_is_the_generators_limit_not_the_hosts() -> None:
    """The issue's search: the host's two cores full, the server's one worker at 73 %, caplab (its
    engine threads and the link delay) at 115 %. The host held the load, but it was not the
    system's: the generator is named, never ``cpu:host (hardware)``."""
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 196.0},
        "generator": {"cpu_percent": 115.0},
        "role:server": {"cpu_percent": 73.0, "max_thread_cpu_percent": 73.0},
    }
    limit = find_limit(70_400.0, scopes, ["server"])
    assert limit["kind"] == "generator" and limit["resource"] == "generator", limit
    assert "59% of the host's busy CPU" in limit["evidence"]["host_shared"]
    assert "cpu:host" not in limit["summary"] and "generator" in limit["summary"]
    # The same host taken by the server itself is the system's.
    mine = scopes | {"generator": {"cpu_percent": 20.0}, "role:server": {"cpu_percent": 170.0}}
    assert find_limit(70_400.0, mine, ["server"])["kind"] == "hardware"


def test_roles_placed_on_cpus_of_their_own_are_judged_together_on_those_cpus() -> None:
    """The quick demo's four-host cell: the generator on CPU 0, msgbus's roles sharing CPU 1, none
    busy alone (processing 60 %), all of them together 98 % of that CPU. The host's two cores,
    the generator's included, say nothing of the system; its one CPU, full, is its limit."""
    roles = {"processing": 60.0, "messagebox": 22.0, "receive": 12.0, "sink": 4.0}
    scopes = {"host": {"cores": 2.0, "cpu_percent": 150.0}, "generator": {"cpu_percent": 50.0}} | {
        f"role:{r}": {"cpu_percent": use, "cpus": 1.0} for r, use in roles.items()
    }
    limit = find_limit(350.0, scopes, list(roles))
    # Named by the roles that share the CPU, as roles on one machine are: not the host's.
    assert limit["kind"] == "hardware", limit
    assert limit["resource"] == "cpu:processing+messagebox+receive+sink", limit
    assert LimitKind.of(limit) == LimitKind.CPU
    assert limit["utilization"] == pytest.approx(0.98)
    assert "1 of 2 CPUs placed for the system" in limit["summary"]
    # Shared with the generator (each role on both CPUs), the host is all processes' again.
    shared = scopes | {f"role:{r}": {"cpu_percent": use, "cpus": 2.0} for r, use in roles.items()}
    [host] = [d for d in demands(350.0, shared, list(roles)) if d.resource == "cpu:host"]
    assert host.utilization == pytest.approx(0.75) and "all processes" in host.note


def test_single_busy_thread_on_an_idle_looking_machine() -> None:
    """One thread at a whole core is saturated, however idle the other cores look."""
    scopes = {
        "host": {"cores": 8.0, "cpu_percent": 120.0},
        "role:server": {"cpu_percent": 101.0, "max_thread_cpu_percent": 98.0},
    }
    limit = find_limit(480.0, scopes, ["server"])
    assert limit["kind"] == "hardware"
    assert limit["resource"] == "cpu:server"
    assert limit["utilization"] == pytest.approx(0.98)
    assert "busiest thread at 98% of one core" in limit["evidence"]["demands"][0]["note"]


def test_saturated_disk_is_the_limit() -> None:
    scopes = {
        "host": {"cores": 4.0, "cpu_percent": 60.0},
        "role:db": {"cpu_percent": 50.0, "max_thread_cpu_percent": 20.0},
        "disk:sda": {"busy_percent": 97.0, "read_iops": 150.0, "write_iops": 50.0, "avg_queue": 7.5},
        "disk:sdb": {"busy_percent": 3.0, "read_iops": 1.0, "write_iops": 0.0},
    }
    limit = find_limit(200.0, scopes, ["db"])
    assert limit["kind"] == "hardware"
    assert limit["resource"] == "disk:sda"
    assert limit["bound_rps"] == pytest.approx(200.0 / 0.97)
    table = limit["evidence"]["demands"]
    assert table[0]["resource"] == "disk:sda"
    assert "queue 7.5" in table[0]["note"]
    used = [d["utilization"] for d in table]
    assert used == sorted(used, reverse=True), "the demands table is largest first"


def test_an_idle_disk_does_not_appear() -> None:
    scopes = {"role:app": {"cpu_percent": 10.0}, "disk:sda": {"busy_percent": 0.0, "read_iops": 0.0}}
    assert [d.resource for d in demands(100.0, scopes, ["app"])] == ["cpu:app"]


def test_a_saturated_link_is_the_limit() -> None:
    scopes = {
        "role:app": {"cpu_percent": 20.0},
        "net:eth0": {"link_mb_s": 125.0, "tx_mb_s": 120.0, "rx_mb_s": 2.0},
    }
    limit = find_limit(1200.0, scopes, ["app"])
    assert limit["resource"] == "net:eth0"
    assert limit["kind"] == "hardware"


def test_a_roles_shaped_link_is_named_by_the_role() -> None:
    scopes = {
        "role:db": {"cpu_percent": 20.0},
        "link:db": {"link_mb_s": 12.5, "tx_mb_s": 11.9, "rx_mb_s": 0.4},
    }
    limit = find_limit(9000.0, scopes, ["db"])
    assert limit["resource"] == "link:db" and limit["utilization"] == pytest.approx(11.9 / 12.5)


def test_nothing_busy_is_a_software_limit_with_evidence() -> None:
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 30.0},
        "role:server": {"cpu_percent": 8.0, "max_thread_cpu_percent": 8.0},
    }
    signals = ["throughput stopped growing with load: a concurrency ceiling"]
    limit = find_limit(95.0, scopes, ["server"], signals)
    assert set(limit) == KEYS
    assert limit["kind"] == "software"
    assert limit["resource"] == "software"
    assert limit["bound_rps"] is None
    found = limit["evidence"]["signals"]
    assert found[0].startswith("no hardware resource near saturation at capacity")
    assert found[1:] == signals
    assert limit["summary"].startswith("software: ")
    assert "concurrency ceiling" in limit["summary"]


def test_nothing_measured_is_software_and_says_so() -> None:
    limit = find_limit(95.0, {}, ["server"])
    assert limit["kind"] == "software"
    assert "no resource was measured" in limit["summary"]


def test_no_sut_role_means_unknown_rather_than_a_guess() -> None:
    scopes = {"host": {"cores": 2.0, "cpu_percent": 199.0}}
    limit = find_limit(500.0, scopes, [])
    assert set(limit) == KEYS
    assert limit["kind"] == "unknown"
    assert limit["resource"] is None
    assert limit["bound_rps"] is None
    assert "no SUT process was named" in limit["summary"]


def test_busy_at_capacity_and_saturated_just_above_is_hardware() -> None:
    """A latency SLO gives out before the CPU is full: 65 % at capacity, 90 % in the trial above."""
    scopes = {"role:server": {"cpu_percent": 65.0, "max_thread_cpu_percent": 65.0}}
    assert find_limit(300.0, scopes, ["server"], above=("cpu:server", 0.90))["kind"] == "hardware"
    assert find_limit(300.0, scopes, ["server"], above=("cpu:server", 0.70))["kind"] == "software"
    assert find_limit(300.0, scopes, ["server"], above=("disk:sda", 0.95))["kind"] == "software"
    assert find_limit(300.0, scopes, ["server"])["kind"] == "software"
    quiet = {"role:server": {"cpu_percent": 40.0}}
    assert find_limit(300.0, quiet, ["server"], above=("cpu:server", 0.95))["kind"] == "software"


def test_demand_and_bound_are_inverse() -> None:
    (d,) = demands(400.0, {"role:a": {"cpu_percent": 80.0}}, ["a"])
    assert d.demand_ms == pytest.approx(2.0)
    assert d.bound_rps is not None
    assert d.bound_rps == pytest.approx(500.0)
    assert d.demand_ms * d.bound_rps == pytest.approx(1000.0)
    (idle,) = demands(0.0, {"role:a": {"cpu_percent": 0.0}}, ["a"])
    assert idle.bound_rps is None
    assert idle.demand_ms == 0.0
