"""What people type in a study file: sizes, rates, profiles; and the errors bad input gets."""

from __future__ import annotations

import pytest

from caplab.profiles import CpuLimit, LinkClass, MemoryLimit, Profile, VolumeClass, parse_rate, parse_size
from caplab.profiles.models import describe_cpus, scale_cpu


def test_sizes_are_binary_and_rates_decimal() -> None:
    assert parse_size("256M") == 256 << 20
    assert parse_size("4G") == 4 << 30
    assert parse_size("512Ki") == 512 << 10
    assert parse_size("1GiB") == 1 << 30
    assert parse_size(4096) == 4096
    assert parse_rate("100mbit") == 100_000_000
    assert parse_rate("1gbit") == 1_000_000_000
    assert parse_rate("1.5Gbit") == 1_500_000_000


@pytest.mark.parametrize("text", ["lots", "4X", "", "-1G", "0", "G", "4 G B"])
def test_a_memory_string_that_does_not_parse_says_what_a_size_looks_like(text: str) -> None:
    with pytest.raises(ValueError, match=r"memory.*(not a size|must be > 0)"):
        MemoryLimit.parse(text)


@pytest.mark.parametrize("text", ["100mb", "fast", "1gbps", "100"])
def test_a_link_rate_that_does_not_parse_names_tc_units(text: str) -> None:
    with pytest.raises(ValueError, match=r"link rate"):
        LinkClass.parse(text)


@pytest.mark.parametrize("cpus", [0, -1, 0.0])
def test_zero_or_negative_cpus_is_refused(cpus: float) -> None:
    with pytest.raises(ValueError, match=r"cpus must be a number > 0"):
        CpuLimit(cpus)


def test_a_cpuset_must_be_a_cpu_list() -> None:
    assert CpuLimit(1, "0-1,3").cpuset == "0-1,3"
    with pytest.raises(ValueError, match=r"cpuset: 'any' is not a CPU list"):
        CpuLimit(1, "any")


def test_an_unknown_volume_or_link_class_names_the_field_and_the_classes_that_exist() -> None:
    hdd = VolumeClass(size=parse_size("1G"), write_iops=180)
    with pytest.raises(
        ValueError, match=r"profile db: volumes\.log: unknown volume class or device 'ssd' \(defined: hdd\)"
    ):
        Profile.build("db", volumes={"data": "hdd", "log": "ssd"}, volume_classes={"hdd": hdd})
    with pytest.raises(ValueError, match=r"profile db: link: unknown link class '10gbit' \(defined: none\)"):
        Profile.build("db", link="10gbit")


def test_volume_and_link_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match=r"write_iops must be a whole number > 0"):
        VolumeClass(size=1 << 30, write_iops=0)
    with pytest.raises(ValueError, match=r"volume size must be at least 16M"):
        VolumeClass(size=1 << 20)
    with pytest.raises(ValueError, match=r"mtu must be within"):
        LinkClass(10**9, mtu=100)


def test_scale_states_a_profile_both_ways() -> None:
    assert scale_cpu(8, 0.25) == 2.0
    assert describe_cpus(CpuLimit(8), 0.25) == "8 cores, emulated as 2.0 host CPUs"
    hdd = VolumeClass(size=2 << 30, read_iops=180, write_iops=180, read_bw=150 << 20, write_bw=150 << 20)
    profile = Profile.build(
        "db",
        cpus=8,
        memory="16G",
        volumes={"data": "hdd"},
        link="1gbit",
        volume_classes={"hdd": hdd},
        link_classes={"1gbit": LinkClass.parse("1gbit", 9000)},
    )
    assert profile.describe(0.25) == [
        "8 cores, emulated as 2.0 host CPUs",
        "16G memory, no swap",
        "data (hdd): 180 IOPS throttle, 150MB/s throttle on a 2G loop volume",
        "1gbit: 1 Gbit/s link, MTU 9000",
    ]
    with pytest.raises(ValueError, match=r"scale.cpu must be > 0"):
        scale_cpu(8, 0)


def test_a_volume_class_is_read_from_the_study_files_mapping() -> None:
    hdd = VolumeClass.parse("hdd", {"size": "2G", "read_iops": 180, "write_iops": 180, "write_bw": "150M"})
    assert hdd == VolumeClass(size=2 << 30, read_iops=180, write_iops=180, write_bw=150 << 20)
    ssd = VolumeClass.parse("ssd", {"size": "2G", "write_iops": 20000, "dwpd": 3, "years": 5})
    assert (ssd.dwpd, ssd.years, ssd.tbw) == (3.0, 5.0, None)
    with pytest.raises(ValueError, match=r"volumes\.hdd: unknown field\(s\) iops \(known: .*write_iops"):
        VolumeClass.parse("hdd", {"size": "2G", "iops": 180})
    with pytest.raises(ValueError, match=r"volumes\.hdd\.write_iops must be a whole number > 0, got '180'"):
        VolumeClass.parse("hdd", {"size": "2G", "write_iops": "180"})
    with pytest.raises(ValueError, match=r"volumes\.hdd: size is required"):
        VolumeClass.parse("hdd", {"write_iops": 180})
    with pytest.raises(ValueError, match=r"volumes\.hdd\.size: 'two' is not a size"):
        VolumeClass.parse("hdd", {"size": "two"})
