"""Which cgroup version holds the controllers, from /proc/self/mountinfo (pure: sample texts)."""

from __future__ import annotations

from pathlib import Path

from caplab.profiles.cgroup import parse_mountinfo

HYBRID = """\
25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
27 25 0:24 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
31 25 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 25 0:29 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
"""
PURE_V2 = """\
35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
"""


def test_a_hybrid_machine_is_v1_for_the_controllers_v1_holds() -> None:
    v1, v2 = parse_mountinfo(HYBRID)
    assert v1["cpu"] == v1["cpuacct"] == Path("/sys/fs/cgroup/cpu,cpuacct")
    assert v1["memory"] == Path("/sys/fs/cgroup/memory")
    assert v1["blkio"] == Path("/sys/fs/cgroup/blkio")
    assert "systemd" not in v1 and "name=systemd" not in v1
    assert v2 == Path("/sys/fs/cgroup/unified")


def test_a_pure_v2_machine_has_one_root() -> None:
    v1, v2 = parse_mountinfo(PURE_V2)
    assert v1 == {}
    assert v2 == Path("/sys/fs/cgroup")
