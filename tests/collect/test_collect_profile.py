"""The profile collector turns what the kernel counted for a role (as ``CellHardware.usage``
returns it) into figures on the load's clock: memory against the limit, OOM kills since the trial
started, the quota's throttling and each volume's IO under the volume's name."""

from __future__ import annotations

import pytest

from caplab.collect import ProfileCollector, ProfileSource
from caplab.collect.profile import RoleUsage

MIB = 1 << 20


def test_profile_figures_per_role_and_volume() -> None:
    readings: list[RoleUsage] = [
        {
            "cpu": {"quota_host_cpus": 0.5, "periods": 100, "throttled_periods": 10},
            "memory": {
                "usage_bytes": 64 * MIB,
                "peak_bytes": 64 * MIB,
                "limit_bytes": 256 * MIB,
                "limit_hits": 3,
                "oom_kills": 1,
                "major_faults": 40,
            },
            "volume:data": {"reads": 0, "writes": 100, "write_sectors": 800, "write_ms": 50, "io_ms": 10},
        },
        {
            "cpu": {"quota_host_cpus": 0.5, "periods": 200, "throttled_periods": 60},
            "memory": {
                "usage_bytes": 128 * MIB,
                "peak_bytes": 130 * MIB,
                "limit_bytes": 256 * MIB,
                "limit_hits": 5,
                "oom_kills": 2,
                "major_faults": 70,
            },
            "volume:data": {"reads": 0, "writes": 140, "write_sectors": 1120, "write_ms": 90, "io_ms": 30},
        },
    ]
    collector = ProfileCollector(
        "db", ProfileSource(lambda: readings.pop(0), {"data": "db.data"}, {"data": {"write_iops": 40.0}})
    )
    collector.start()
    got = {(s.scope, s.metric): s.value for s in collector.sample(0.5)}
    assert got[("role:db", "quota_cpus")] == 0.5
    assert got[("role:db", "cpu_throttled_percent")] == 50.0
    assert got[("role:db", "mem_percent")] == 50.0 and got[("role:db", "mem_limit_mb")] == 256.0
    assert got[("role:db", "oom_kills")] == 1 and got[("role:db", "mem_limit_hits")] == 2
    assert got[("role:db", "mem_major_faults")] == 30
    assert got[("volume:db.data", "await_ms")] == 1.0  # 40 ms over 40 writes
    iops = got[("volume:db.data", "write_iops")]
    assert iops > 0 and got[("volume:db.data", "throttle_percent")] == pytest.approx(100.0 * iops / 40)


def test_a_roles_link_is_measured_against_its_shaped_rate_not_the_veths() -> None:
    """100 Mbit/s is 12.5 MB/s, whatever the veth claims; what the role received and sent are the
    host end's transmitted and received bytes (profiles/links.py swaps them once)."""
    link = {"rate_bits": 100_000_000, "received_bytes": 0, "sent_bytes": 0, "dropped": 0}
    after = {**link, "received_bytes": 3_000_000, "sent_bytes": 1_000_000, "dropped": 4}
    readings: list[RoleUsage] = [{"link": link}, {"link": after}]
    collector = ProfileCollector("web", ProfileSource(lambda: readings.pop(0)))
    collector.start()
    got = {(s.scope, s.metric): s.value for s in collector.sample(0.5)}
    assert got[("link:web", "link_mb_s")] == 12.5
    rx, tx = got[("link:web", "rx_mb_s")], got[("link:web", "tx_mb_s")]
    assert rx > 0 and rx == pytest.approx(3 * tx)
    assert got[("link:web", "dropped_s")] == pytest.approx(4 * tx)  # 4 drops in the MB-per-second's time


def test_an_fsyncs_cache_flush_counts_against_the_volumes_write_ceiling() -> None:
    """20 writes and 20 flushes against a 40-IOPS class: the volume is at its ceiling, though its
    write count alone says half."""
    before = {"writes": 100, "flushes": 100, "write_sectors": 800, "io_ms": 0}
    after = {"writes": 120, "flushes": 120, "write_sectors": 960, "io_ms": 0}
    readings: list[RoleUsage] = [{"volume:log": before}, {"volume:log": after}]
    collector = ProfileCollector(
        "db", ProfileSource(lambda: readings.pop(0), {}, {"log": {"write_iops": 40.0}})
    )
    collector.start()
    got = {(s.scope, s.metric): s.value for s in collector.sample(0.5)}
    writes, flushes = got[("volume:log", "write_iops")], got[("volume:log", "flush_iops")]
    assert writes == pytest.approx(flushes) and writes > 0
    assert got[("volume:log", "throttle_percent")] == pytest.approx(100 * 2 * writes / 40)
