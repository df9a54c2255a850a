"""The advice for a cell bounded by a volume comes from the study's own measurements: it names the
volume, and a layout that changed only that role's volumes is named with both figures when it
carried more; otherwise the advice is neutral (a faster device, or another beside it), with the
layouts that carried no more stated. Never the seed paper's lesson ("the log on a disk of its own,
as the Connexion tests found"): caplab's own two-disk cell once measured slower than one disk."""

from __future__ import annotations

from typing import Any, cast

from caplab.profiles import LinkClass, Profile, VolumeClass
from caplab.report.model.types import Measured
from caplab.report.text.recommend import advice

CLASSES = {
    "hdd": VolumeClass(512 << 20, read_iops=180, write_iops=180),
    "ssd": VolumeClass(1 << 30, read_iops=40000, write_iops=20000),
}
PAPERS_LESSON = ("Connexion", "the log) on a disk", "disk of their own", "SSD/NVMe")


def cell(
    index: int, setup: str, volumes: dict[str, str], limit: str, link: str | None = None
) -> dict[str, Any]:
    """A complete cell whose database role ran on ``volumes``, its hardware in the words caplab records."""
    links = {"1gbit": LinkClass.parse("1gbit")}
    profile = Profile.build(setup, volumes=volumes, link=link, volume_classes=CLASSES, link_classes=links)
    return {
        "index": index,
        "label": f"setup={setup}",
        "factors": {"setup": setup},
        "status": "complete",
        "limit": {"resource": limit, "kind": "hardware", "summary": ""},
        "resources": {},
        "hardware": {"engine": ["profile app", "2 cores"], "db": [f"profile {setup}", *profile.describe()]},
    }


def capacity(index: int, value: float, indistinguishable: tuple[int, ...] = ()) -> dict[str, Any]:
    return {"cell": index, "value": value, "unit": "req/s", "indistinguishable": list(indistinguishable)}


def advised(cells: list[dict[str, Any]], figures: list[dict[str, Any]]) -> list[str]:
    results = {"cells": cells, "capacity": figures, "goal": None, "scaling": []}
    return advice(cast(Measured, results), [])


def about(lines: list[str], label: str) -> str:
    [line] = [x for x in lines if x.endswith(f"({label})")]
    return line


def test_a_layout_that_carried_more_is_named_with_both_figures() -> None:
    cells = [
        cell(0, "hdd", {"data": "hdd"}, "volume:data"),
        cell(1, "hdd-split", {"data": "hdd", "log": "hdd"}, "volume:log"),
        cell(2, "ssd", {"data": "ssd"}, "cpu:host"),
        cell(3, "remote", {"data": "ssd"}, "link:db", link="1gbit"),  # a link too: not a layout change
    ]
    lines = advised(cells, [capacity(0, 30), capacity(1, 25), capacity(2, 2000), capacity(3, 3000)])
    hdd = about(lines, "setup=hdd")
    assert hdd.startswith("The volume data is the limit. Measured in this study")
    assert "setup=ssd (data on ssd instead of hdd) 2,000/s against 30/s" in hdd
    assert "remote" not in hdd and "hdd-split" not in hdd, "only the layouts that carried more"
    assert not any(words in line for line in lines for words in PAPERS_LESSON), lines


def test_a_split_that_carried_no_more_leaves_the_advice_neutral_and_says_so() -> None:
    cells = [
        cell(0, "hdd", {"data": "hdd"}, "volume:data"),
        cell(1, "hdd-split", {"data": "hdd", "log": "hdd"}, "volume:log"),
    ]
    lines = advised(cells, [capacity(0, 30), capacity(1, 25)])
    hdd = about(lines, "setup=hdd")
    assert hdd.startswith("The volume data is the limit: a faster device for it, or another")
    assert "no layout that shows by how much" in hdd
    assert "setup=hdd-split (log on a volume of its own) 25/s against 30/s, no more" in hdd
    # The split cell's own limit, its log: no layout of this study changed it.
    split = about(lines, "setup=hdd-split")
    assert split.startswith("The volume log is the limit: a faster device") and "Measured here" not in split
    assert not any(words in line for line in lines for words in PAPERS_LESSON), lines


def test_more_within_the_replicates_noise_is_not_carried_more() -> None:
    cells = [cell(0, "hdd", {"data": "hdd"}, "volume:data"), cell(1, "ssd", {"data": "ssd"}, "volume:data")]
    lines = advised(cells, [capacity(0, 30, (1,)), capacity(1, 33, (0,))])
    hdd = about(lines, "setup=hdd")
    assert "a faster device" in hdd and "33/s against 30/s, within the replicates' noise" in hdd


def test_a_host_disk_gets_neutral_advice() -> None:
    plain = {**cell(0, "one", {}, "disk:sda"), "hardware": None}
    [line] = advised([plain], [capacity(0, 100)])
    assert line.startswith("The disk sda is the limit: a faster device, or another")
    assert not any(words in line for words in PAPERS_LESSON), line


def test_roles_placed_apart_from_the_generator_get_their_own_cpu_advice() -> None:
    """With the generator on a CPU of its own the busy host is partly the generator's: the roles'
    CPUs together (``cpu:engine+db``) are the ceiling, and the advice says so, not the host's."""
    placed = cell(0, "ssd", {"data": "ssd"}, "cpu:engine+db")
    placed["resources"] = {"host": {"cpu_util_percent": 97.0}}
    [line] = advised([placed], [capacity(0, 1200)])
    assert line.startswith("engine and db together are CPU-bound"), line
    shared = cell(0, "ssd", {"data": "ssd"}, "cpu:host") | {"resources": {"host": {"cpu_util_percent": 97.0}}}
    [line] = advised([shared], [capacity(0, 1200)])
    assert line.startswith("The host's CPU is the ceiling"), line
