"""Prices and drive life, worked by hand."""

from __future__ import annotations

import pytest

from caplab.analysis.cost import (
    PricedRole,
    Prices,
    ProfilePrice,
    configuration_cost,
    per_capacity,
    priced_roles,
)
from caplab.analysis.endurance import endurance, endurance_line


def test_a_configuration_is_priced_by_its_parts_and_its_cores() -> None:
    prices = Prices(
        profiles={
            "hosts": ProfilePrice(base=500.0, per_cpu=250.0),
            "db": ProfilePrice(base=4000.0, per_gb=20.0),
        },
        volumes={"ssd": 800.0},
        links={"1gbit": 100.0},
    )
    roles = [
        PricedRole("hosts", "hosts", cpus=4),
        PricedRole("db", "db", cpus=8, memory_gb=16, volume_classes=("hdd", "ssd"), link_class="1gbit"),
    ]
    cost = configuration_cost(prices, {"hosts": 4}, roles)
    # hosts 500 + 4 × 250; db 4,000 + 16 × 20; one ssd 800; the link 100; the hdd has no price.
    assert cost.total == pytest.approx(1500 + 4320 + 800 + 100)
    assert cost.unpriced == ["volume class hdd (role db)"]
    assert ("role hosts: profile hosts (4 CPUs)", 1500.0) in cost.parts
    assert per_capacity(cost.total, 2000.0) == pytest.approx(6720 / 2)  # per 1,000/s


def test_a_device_holding_three_volumes_is_one_drive_and_a_volume_class_one_per_volume() -> None:
    """``internal: {data: pair, log: pair, temp: pair}`` is one mirrored pair bought once;
    ``{data: plain, log: plain}`` on a volume class is two throttled volumes, two drives."""

    class Words:
        def __init__(self, volumes: dict[str, str]) -> None:
            self.cpus, self.memory, self.link, self.volumes = 2.0, None, None, volumes

    profiles = {
        "internal": Words({"data": "pair", "log": "pair", "temp": "pair"}),
        "split": Words({"data": "plain", "log": "plain", "temp": "pair"}),
    }
    internal, split = priced_roles({"a": "internal", "b": "split"}, {}, profiles, devices={"pair"})
    assert internal.volume_classes == ("pair",)
    assert split.volume_classes == ("plain", "plain", "pair")
    prices = Prices(volumes={"pair": 400.0, "plain": 100.0})
    assert configuration_cost(prices, {}, [internal]).total == 400.0
    assert configuration_cost(prices, {}, [split]).total == 600.0


def test_a_whole_configuration_price_wins_over_its_parts() -> None:
    prices = Prices(profiles={"p": ProfilePrice(base=1.0)}, configurations=[({"layout": "ssd"}, 14_300.0)])
    whole = configuration_cost(prices, {"layout": "ssd"}, [PricedRole("a", "p")])
    assert whole.total == 14_300.0 and whole.parts == [("configuration layout=ssd", 14_300.0)]
    assert configuration_cost(prices, {"layout": "hdd"}, [PricedRole("a", "p")]).total == 1.0


def test_a_drive_written_at_30_mb_a_second() -> None:
    # 30 MB/s is 2.592 TB a day; a 400 GB drive rated 10 DWPD for 5 years takes 7,300 TB: 7.7 years.
    e = endurance("log", 30.0, 400 * 10**9, dwpd=10, rated_years=5)
    assert e.tb_per_day == pytest.approx(2.592)
    assert e.rated_tbw == pytest.approx(7300.0)
    assert e.years == pytest.approx(7300 / (2.592 * 365))
    assert (
        endurance_line(e)
        == "log: 30.0 MB/s written → 2.59 TB a day; rated for 7,300 TB written, it lasts 7.7 years"
    )
    assert endurance("data", 0.0, 10**9, tbw=100).years is None, "nothing written: no wear to speak of"
