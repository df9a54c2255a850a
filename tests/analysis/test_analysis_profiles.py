"""A role on a hardware profile is judged against its profile: ``mem[ROLE]`` against its memory
limit, its CPU against its quota, and a role pressed against its memory limit is the limit."""

from __future__ import annotations

import pytest

from caplab.analysis.limit import find_limit
from caplab.analysis.slo import SloError, TrialFigures, parse_slo


def figures(resources: dict[str, dict[str, float]]) -> TrialFigures:
    return TrialFigures(100.0, 100.0, 100, 0, {"p99": 10.0}, resources, 2)


def test_mem_role_is_a_share_of_the_roles_limit() -> None:
    slo = parse_slo("mem[db]<=80%")
    assert slo.evaluate(figures({"db": {"mem_percent": 79.0}})).passed
    verdict = slo.evaluate(figures({"db": {"mem_percent": 93.0}}))
    assert not verdict.passed and verdict.reason == "mem[db]<=80%: 93% fails <= 80%"
    assert not slo.evaluate(figures({"db": {"rss_mb": 10.0}})).passed, "no limit: no data, not a pass"


def test_cpu_role_on_a_profile_is_a_share_of_its_quota() -> None:
    """47 % of one host core is 94 % of a 0.5-host-CPU quota: ``cpu[app]<=75%`` fails on the
    profile, where against a host core it could never fail; the reason reads both ways."""
    slo = parse_slo("cpu[app]<=75%")
    verdict = slo.evaluate(figures({"app": {"cpu_percent": 47.0, "quota_cpus": 0.5}}))
    assert not verdict.passed and verdict.observed == pytest.approx(94.0)
    assert verdict.reason == (
        "cpu[app]<=75%: 94% fails <= 75% (of its profile's quota of 0.5 host CPUs; 47% of one host core)"
    )
    assert slo.evaluate(figures({"app": {"cpu_percent": 35.0, "quota_cpus": 0.5}})).passed
    # Four profile cores emulated as 2 host CPUs: 120 % of one host core is 60 % of the profile.
    assert slo.evaluate(figures({"app": {"cpu_percent": 120.0, "quota_cpus": 2.0}})).observed == 60.0
    unlimited = slo.evaluate(figures({"app": {"cpu_percent": 80.0}}))
    assert not unlimited.passed and unlimited.observed == 80.0, "no quota: 100 % is one host core"


def test_mem_without_a_role_is_the_hosts_memory_in_use() -> None:
    slo = parse_slo("mem<=80%")
    assert slo.role is None
    assert slo.evaluate(figures({"host": {"mem_percent": 42.0}, "db": {"mem_percent": 99.0}})).passed
    verdict = slo.evaluate(figures({"host": {"mem_percent": 85.0}}))
    assert not verdict.passed and verdict.reason == "mem<=80%: 85% fails <= 80%"
    assert not slo.evaluate(figures({"host": {"mem_used_mb": 900.0}})).passed, "no total: no data"
    with pytest.raises(SloError, match=r"must be a percentage"):
        parse_slo("mem<=800M")


def test_a_roles_cpu_is_measured_against_its_quota() -> None:
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 60.0},
        "role:app": {"cpu_percent": 47.0, "quota_cpus": 0.5},
    }
    limit = find_limit(200.0, scopes, ["app"])
    assert limit["resource"] == "cpu:app" and limit["utilization"] == pytest.approx(0.94)
    assert "against its profile's quota of 0.5 host CPUs" in limit["summary"]


def test_a_role_throttled_in_most_periods_is_bound_by_its_quota_below_its_mean() -> None:
    """58 % of its quota on average but throttled in 95 % of the periods: the quota holds the role
    back (it runs out within each period), so its CPU is the limit, not software; throttled in few
    periods, the same mean use is not near saturation."""
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 70.0},
        "role:transport": {"cpu_percent": 29.0, "quota_cpus": 0.5, "cpu_throttled_percent": 95.0},
        "role:access": {"cpu_percent": 20.0, "quota_cpus": 0.5, "cpu_throttled_percent": 30.0},
    }
    limit = find_limit(100.0, scopes, ["transport", "access"])
    assert limit["resource"] == "cpu:transport" and limit["kind"] == "hardware"
    assert limit["utilization"] == pytest.approx(0.95) and limit["bound_rps"] is None
    assert "bounds throughput" not in limit["summary"], "no bound drawn from throttled periods"
    summary = "throttled in 95% of its quota's periods (29% of a core, 58% of its profile's quota"
    assert summary in limit["summary"]
    access = next(d for d in limit["evidence"]["demands"] if d["resource"] == "cpu:access")
    assert access["utilization"] == pytest.approx(0.40), "throttled less than its mean use: the mean"
    scopes["role:transport"]["cpu_throttled_percent"] = 10.0
    assert find_limit(100.0, scopes, ["transport", "access"])["kind"] == "software"
    unlimited = {"host": scopes["host"], "role:app": {"cpu_percent": 29.0, "cpu_throttled_percent": 95.0}}
    host_share = find_limit(100.0, unlimited, ["app"])["utilization"]
    assert host_share == pytest.approx(0.145), "no quota: a share of the 2 host cores, throttling aside"


def test_a_combined_server_held_to_its_cpu_ceiling_is_cpu_bound_short_of_saturation() -> None:
    """users.yaml's 8c/12G: at capacity the combined server used 64 % of its quota, and the next
    load failed ``cpu[transport+access]<=75%`` at 76 % — short of saturation both times, yet the
    SLO's acceptable maximum is what stopped it: its CPU is the limit, not software. A ceiling
    failed on another resource, or a resource little used at capacity, does not make it so."""
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 99.0},
        "role:transport": {"cpu_percent": 24.0, "quota_cpus": 0.5},
        "role:access": {"cpu_percent": 8.0, "quota_cpus": 0.5},
        "role:mailbox": {"cpu_percent": 22.0},
    }
    roles, machines = ["transport", "access", "mailbox"], {"transport": "server", "access": "server"}
    above = ("cpu:transport+access", 0.76)
    assert find_limit(48.0, scopes, roles, above=above, machines=machines)["kind"] == "software"
    limit = find_limit(48.0, scopes, roles, above=above, machines=machines, ceiling="cpu:access+transport")
    assert limit["resource"] == "cpu:transport+access" and limit["kind"] == "hardware"
    assert limit["utilization"] == pytest.approx(0.64)
    assert limit["summary"].endswith("the first load above capacity took it past its ceiling in the SLO")
    other = find_limit(48.0, scopes, roles, above=above, machines=machines, ceiling="cpu:mailbox")
    assert other["kind"] == "software"
    idle = scopes | {"role:transport": {"cpu_percent": 12.0, "quota_cpus": 0.5}}
    quiet = find_limit(48.0, idle, roles, machines=machines, ceiling="cpu:transport+access")
    assert quiet["kind"] == "software"


def test_a_cpu_ceiling_names_the_resource_it_holds() -> None:
    assert parse_slo("cpu[transport+access]<=75%").ceiling == "cpu:transport+access"
    assert parse_slo("cpu<=75%").ceiling == "cpu:host"
    assert parse_slo("cpu[db]<75%").ceiling == "cpu:db"
    assert parse_slo("p99<=2s").ceiling is None and parse_slo("mem[db]<=80%").ceiling is None


def test_a_throttled_volume_the_host_waits_on_is_the_limit_short_of_its_ceiling() -> None:
    """A writer fsyncing record by record on a 40-IOPS volume: 72 % of the ceiling, the process
    asleep in I/O (the host waiting a core's worth). The volume is the limit, with the wait as
    evidence; the same share with the host not waiting, or a volume with no ceiling, is not."""
    volume = {"write_iops": 20.0, "flush_iops": 9.0, "busy_percent": 0.1, "throttle_percent": 72.0}
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 2.0, "iowait_percent": 99.0},
        "role:writer": {"cpu_percent": 1.0},
        "volume:log": volume,
    }
    limit = find_limit(7.0, scopes, ["writer"])
    assert limit["resource"] == "volume:log" and limit["kind"] == "hardware"
    assert limit["utilization"] == pytest.approx(0.72)
    assert any("waited on I/O for 0.99 of a core" in s for s in limit["evidence"]["signals"])
    awake = scopes | {"host": {"cores": 2.0, "iowait_percent": 20.0}}
    assert find_limit(7.0, awake, ["writer"])["kind"] == "software"
    unthrottled = {k: v for k, v in volume.items() if k != "throttle_percent"} | {"busy_percent": 72.0}
    assert find_limit(7.0, scopes | {"volume:log": unthrottled}, ["writer"])["kind"] == "software"
    idle = volume | {"throttle_percent": 40.0}
    assert find_limit(7.0, scopes | {"volume:log": idle}, ["writer"])["kind"] == "software"


def test_a_role_at_its_memory_limit_is_named_memory_with_the_evidence() -> None:
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 100.0},
        "role:db": {
            "cpu_percent": 95.0,
            "quota_cpus": 1.0,
            "mem_percent": 97.0,
            "mem_limit_mb": 256.0,
            "mem_limit_hits": 12.0,
            "oom_kills": 0.0,
        },
    }
    limit = find_limit(200.0, scopes, ["db"])
    assert limit["resource"] == "memory:db" and limit["kind"] == "hardware"
    assert limit["evidence"]["memory"] == [
        "97% of its 256 MB limit",
        "the limit was hit (the kernel reclaimed to stay under it)",
    ]
    scopes["role:db"] |= {"mem_percent": 50.0, "mem_limit_hits": 0.0}
    assert find_limit(200.0, scopes, ["db"])["resource"] == "cpu:db", "far from its limit: not memory"


def test_major_faults_near_the_limit_are_memory_evidence() -> None:
    """Some kernels no longer count limit hits: a role near its limit whose own pages are read back
    from disk (major faults) is pressed against it all the same."""
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 100.0},
        "role:app": {"cpu_percent": 90.0, "quota_cpus": 1.0, "mem_percent": 92.0, "mem_limit_mb": 256.0},
    }
    assert find_limit(100.0, scopes, ["app"])["resource"] == "cpu:app", "no sign of pressure"
    scopes["role:app"]["mem_major_faults"] = 1200.0
    limit = find_limit(100.0, scopes, ["app"])
    assert limit["resource"] == "memory:app"
    assert limit["evidence"]["memory"] == [
        "92% of its 256 MB limit",
        "1,200 major faults (pages read back from disk)",
    ]


def test_a_role_the_oom_killer_stopped_above_capacity_is_the_limit_however_little_it_used_at_it() -> None:
    """Mail servers hold memory per session: at capacity the access role used 40 % of its limit,
    and the first load above it ran the role out of memory. Its CPU at 60 % is not the limit."""
    scopes = {
        "host": {"cores": 2.0, "cpu_percent": 70.0},
        "role:access": {"cpu_percent": 60.0, "quota_cpus": 1.0, "mem_percent": 40.0, "mem_limit_mb": 1024.0},
    }
    limit = find_limit(300.0, scopes, ["access"], above=("memory:access", 1.0))
    assert limit["resource"] == "memory:access" and limit["kind"] == "hardware"
    assert limit["utilization"] == pytest.approx(0.4)
    assert limit["evidence"]["memory"] == [
        "the first load above capacity ran it out of memory (the OOM killer killed a process); "
        "at capacity it used 40% of its 1,024 MB limit"
    ]
    cpu_above = find_limit(300.0, scopes, ["access"], above=("cpu:access", 0.9))
    assert cpu_above["resource"] == "cpu:access", "another resource busy above capacity: not memory"


def test_roles_on_one_machine_are_limited_by_the_machines_cpu_together() -> None:
    """users.yaml's 2c/4G combined server at its capacity: transport at 47 % and access at 14 % of
    the one quota they share, 61 % together; just above it, 97 % together. Apart, neither role was
    busy enough to be the limit, and it read as software; together, the machine's CPU is it."""
    quota = 0.125
    at = {
        "role:transport": {"cpu_percent": 47.0 * quota, "quota_cpus": quota, "mem_percent": 40.0},
        "role:access": {"cpu_percent": 14.0 * quota, "quota_cpus": quota, "mem_percent": 40.0},
        "host": {"cpu_percent": 60.0, "cores": 2.0},
    }
    above = ("cpu:transport+access", 0.97)
    roles = ["transport", "access"]
    apart = find_limit(10.0, at, roles, above=above)
    assert apart["kind"] == "software"
    together = find_limit(10.0, at, roles, above=above, machines={"transport": "server", "access": "server"})
    assert together["resource"] == "cpu:transport+access" and together["kind"] == "hardware"
    assert together["utilization"] == pytest.approx(0.61)
    assert "of a core against its profile's quota of 0.125 host CPUs" in together["summary"]
