"""Device models from a study's ``devices:`` section to the engine: the spec validates each entry,
``device_model`` resolves it (presets, RAID members), and the engine's own simulation of the
result gives the data sheet's figures. No kernel needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from caplab._engine import simulate_device
from caplab.profiles.design import role_hardware
from caplab.profiles.device_design import device_model
from caplab.profiles.device_models import Hdd, Raid
from caplab.spec import DeviceSpec, load_study

DEVICES = TypeAdapter(dict[str, DeviceSpec])


def random_reads(depth: int, span: int) -> str:
    return json.dumps({"op": "read", "pattern": "random", "block": 4096, "depth": depth, "span": span})


def test_the_design_sketch_s_devices_resolve_and_simulate() -> None:
    devices = DEVICES.validate_python(
        {
            "ssd": {"model": "ssd", "size": "2G", "read_us": 90, "write_us": 25, "channels": 8},
            "pair": {"model": "raid1", "of": "hdd-10k", "disks": 2, "cache": "battery-backed"},
            "disk": {"model": "hdd"},
        }
    )
    pair = device_model("pair", devices)
    assert isinstance(pair, Raid) and pair.member_size() == 1 << 30 and pair.cache.mode == "battery-backed"
    disk = device_model("disk", devices)
    assert disk == Hdd(size=1 << 30)
    # 1 / (8.5 ms average seek + 4.17 ms half turn + 0.03 ms transfer) = 78.8 IOPS.
    iops = simulate_device(json.dumps(disk.engine()), random_reads(1, 1 << 30), 60.0)
    assert iops == pytest.approx(78.8, rel=0.03)
    # 10,000 rpm: 4.5 ms + 3 ms + 0.03 ms, 133 IOPS per disk; a mirror's reads at depth 2 go
    # one to each disk: twice that.
    iops = simulate_device(json.dumps(pair.engine()), random_reads(2, 1 << 30), 60.0)
    assert iops == pytest.approx(2 * 133, rel=0.05)


def test_a_field_of_another_kind_or_a_raid_without_members_is_refused() -> None:
    with pytest.raises(ValidationError, match="rpm: not a field of a ssd device"):
        DEVICES.validate_python({"x": {"model": "ssd", "rpm": 7200}})
    with pytest.raises(ValidationError, match="needs of:"):
        DEVICES.validate_python({"x": {"model": "raid0"}})
    devices = DEVICES.validate_python({"x": {"model": "raid0", "of": "nothing"}})
    with pytest.raises(ValueError, match="neither a device nor a preset"):
        device_model("x", devices)


STUDY = """name: internal-disks
target: {http: {url: "http://127.0.0.1:8080/"}}
profiles:
  internal: {cpus: 2, volumes: {data: pair, log: pair, temp: pair}}
devices:
  pair: {model: raid1, of: hdd-10k, disks: 2, cache: battery-backed}
factors: {profile: [internal]}
sut:
  start: ./server --data {volume.data} --log {volume.log}
  roles:
    db: {match: server, profile: "{profile}"}
load: {rate: 10}
"""


def test_a_study_puts_three_mounts_on_one_mirrored_pair(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY)
    cell = load_study(path).cells[0]
    profile = role_hardware(cell.config)["db"]
    assert profile.volumes == {}  # no loop volumes: all three on the device
    assert {v: d for v, (d, _) in profile.devices.items()} == {"data": "pair", "log": "pair", "temp": "pair"}
    assert "log (on pair): raid1 of 2 × (hdd: 10,000 rpm" in "\n".join(profile.describe())
