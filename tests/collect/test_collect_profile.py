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
    assert got[("volume:db.data", "await_ms")] == 1.0  # 40 ms over 40 writes
    iops = got[("volume:db.data", "write_iops")]
    assert iops > 0 and got[("volume:db.data", "throttle_percent")] == pytest.approx(100.0 * iops / 40)
