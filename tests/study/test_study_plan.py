"""A cell's plan is worked out once, before anything starts, and cannot change under the runner."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from caplab.profiles import CellHardware
from caplab.profiles.placement import plan_placement
from caplab.spec import load_study
from caplab.study.plan import plan_cell

STUDY = """name: planned
target:
  http:
    url: http://127.0.0.1:8080/
profiles:
  small: {cpus: 2, memory: 4G, volumes: {data: ssd}}
volumes:
  ssd: {size: 2G, write_iops: 900, dwpd: 1, years: 5}
cost:
  profiles:
    small: {base: 1000}
  volumes: {ssd: 200}
factors: {rate: [10, 20]}
sut:
  start: ./server --data {volume.data}
  roles:
    app: {match: server, profile: small}
load: {rate: "{rate}", warmup: 2s, duration: 8s}
"""


def test_a_cell_is_compiled_into_its_hardware_sut_experiment_and_price(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY)
    study = load_study(path)
    plan = plan_cell(study, study.cells[1])
    assert set(plan.hardware.profiles) == {"app"}
    assert plan.hardware.launched == "app", "one role on one profile: the start command runs on it"
    assert dict(plan.hardware.attach) == {}, "so nothing needs attaching by its match"
    assert [r.name for r in plan.sut.roles] == ["app"]
    assert plan.experiment.kind == "fixed" and plan.experiment.window == (2.0, 10.0)
    prices: dict[str, Any] = dict(plan.prices)
    assert prices["cost"]["total"] == 1200.0
    assert prices["ratings"]["data"]["class"] == "ssd"


def test_a_plan_cannot_change_and_is_bound_to_the_hardware_once_made(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(STUDY)
    study = load_study(path)
    plan = plan_cell(study, study.cells[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.directory = tmp_path  # type: ignore[misc]
    with pytest.raises(TypeError):
        cast(dict[str, Any], plan.hardware.profiles)["db"] = None
    assert plan.on(None) is plan, "no hardware: nothing to fill in"
    hw = cast(CellHardware, SimpleNamespace(volume_paths={"app/data": "/mnt/data"}, addresses={}))
    bound = plan.on(hw)
    assert bound.sut.spec is not None and bound.sut.spec.start == "./server --data /mnt/data"
    assert plan.sut.spec is not None and plan.sut.spec.start == "./server --data {volume.data}"
    assert bound.hardware is plan.hardware and bound.prices is plan.prices


def test_a_profile_pinned_to_the_generators_cpu_shares_the_host_and_says_why(tmp_path: Path) -> None:
    """The default placement gives the generator the first CPU and the system the rest; a role
    whose profile pins it (``cpuset``) onto the generator's CPU would run beside the generator
    whatever the placement said, so the cell shares the host and its note names the role."""
    default = plan_placement(None)
    if not default.isolated:
        pytest.skip(f"this host cannot place the generator apart: {default.note}")
    assert default.generator is not None
    path = tmp_path / "study.yaml"
    pinned = STUDY.replace("small: {cpus: 2,", f'small: {{cpus: 1, cpuset: "{default.generator}",')
    path.write_text(pinned)
    study = load_study(path)
    placement = plan_cell(study, study.cells[0]).hardware.placement
    assert not placement.isolated
    assert placement.note == (
        f"role app's profile pins it to CPUs {default.generator}, beyond the system's {default.system}"
    )
    path.write_text(STUDY.replace("small: {cpus: 2,", f'small: {{cpus: 1, cpuset: "{default.system}",'))
    study = load_study(path)
    assert plan_cell(study, study.cells[0]).hardware.placement.isolated, "pinned within the system's CPUs"
