"""What a configuration costs, and what its capacity costs: the Connexion paper's closing
comparison (11,100 against 14,300 USD for the hardware that meets the goal), computed from the
study's prices instead of written by hand.

A configuration's price is either given whole (``configurations:``, matched on factor values) or
added up from its parts: each role's profile (a fixed price, plus per CPU and per GB of memory of
that profile, so a profile whose cores follow a factor is priced by them), each volume by its class
and each link by its class. Prices are a purchase or per hour; caplab never mixes the two.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

PER = 1000.0
"""Capacity is priced per this many requests (or users) a second: "per 1,000 msg/s"."""


@dataclass(frozen=True)
class ProfilePrice:
    base: float = 0.0
    per_cpu: float = 0.0
    per_gb: float = 0.0


@dataclass(frozen=True)
class PricedRole:
    """What a role runs on, as priced: its profile's name and size, its volumes' and link's classes."""

    role: str
    profile: str
    cpus: float | None = None
    memory_gb: float | None = None
    volume_classes: tuple[str, ...] = ()
    link_class: str | None = None


@dataclass(frozen=True)
class Prices:
    currency: str = "USD"
    basis: str = "purchase"
    profiles: dict[str, ProfilePrice] = field(default_factory=dict)
    volumes: dict[str, float] = field(default_factory=dict)
    links: dict[str, float] = field(default_factory=dict)
    configurations: list[tuple[dict[str, Any], float]] = field(default_factory=list)
    """``(factor values, price)``: a configuration priced whole, matched on those factors."""


class ProfilePriceWords(Protocol):
    """A profile's price as the study gives it (``cost.profiles``)."""

    @property
    def base(self) -> float: ...
    @property
    def per_cpu(self) -> float: ...
    @property
    def per_gb(self) -> float: ...


class ConfigurationPriceWords(Protocol):
    """A whole configuration's price, matched on factor values (``cost.configurations``)."""

    @property
    def when(self) -> Mapping[str, Any]: ...
    @property
    def price(self) -> float: ...


class PriceList(Protocol):
    """The study's ``cost:`` section, read as plain data (analysis does not know the spec)."""

    @property
    def currency(self) -> str: ...
    @property
    def basis(self) -> str: ...
    @property
    def profiles(self) -> Mapping[str, ProfilePriceWords]: ...
    @property
    def volumes(self) -> Mapping[str, float]: ...
    @property
    def links(self) -> Mapping[str, float]: ...
    @property
    def configurations(self) -> Sequence[ConfigurationPriceWords]: ...


def prices_of(price_list: PriceList) -> Prices:
    """The study's price list as the cost analysis reads it."""
    return Prices(
        price_list.currency,
        price_list.basis,
        {n: ProfilePrice(p.base, p.per_cpu, p.per_gb) for n, p in price_list.profiles.items()},
        dict(price_list.volumes),
        dict(price_list.links),
        [(dict(c.when), c.price) for c in price_list.configurations],
    )


class MachineWords(Protocol):
    """A profile as pricing needs it: cores, memory in bytes, its volumes' and link's classes."""

    @property
    def cpus(self) -> float | None: ...
    @property
    def memory(self) -> int | None: ...
    @property
    def volumes(self) -> Mapping[str, str]: ...
    @property
    def link(self) -> str | None: ...


def priced_roles(
    role_profiles: Mapping[str, str],
    machines: Mapping[str, str],
    profiles: Mapping[str, MachineWords],
    devices: Collection[str] = (),
) -> list[PricedRole]:
    """Each machine the roles run on as it is priced (cores in profile CPUs): a role's own profile,
    or once for the roles that share one machine (``transport+access``). ``role_profiles`` maps a
    role to its profile's name, ``machines`` a role to the machine it shares (if it does).
    A volume class is a drive per volume; a device (one of ``devices``) is one drive however many
    of the profile's volumes it holds."""
    on: dict[str, tuple[list[str], str]] = {}
    for role, name in role_profiles.items():
        on.setdefault(machines.get(role, f"role:{role}"), ([], name))[0].append(role)
    out = []
    for roles, name in on.values():
        p = profiles[name]
        memory = p.memory / 2**30 if p.memory is not None else None
        drives = [c for c in p.volumes.values() if c not in devices]
        drives += dict.fromkeys(c for c in p.volumes.values() if c in devices)
        out.append(PricedRole("+".join(roles), name, p.cpus, memory, tuple(drives), p.link))
    return out


@dataclass(frozen=True)
class Cost:
    total: float | None
    currency: str
    basis: str
    parts: list[tuple[str, float]]
    """What was added up (``role hosts: profile hosts, 4 CPUs``, price), or the whole configuration."""
    unpriced: list[str]
    """Parts with no price: the total leaves them out, and says so."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def configuration_cost(prices: Prices, factors: dict[str, Any], roles: list[PricedRole]) -> Cost:
    """The cell's price: a matching whole-configuration price, else the sum of its parts."""
    for when, price in prices.configurations:
        if all(factors.get(k) == v for k, v in when.items()):
            shown = " ".join(f"{k}={v}" for k, v in when.items()) or "every configuration"
            return Cost(price, prices.currency, prices.basis, [(f"configuration {shown}", price)], [])
    parts: list[tuple[str, float]] = []
    unpriced: list[str] = []
    for r in roles:
        p = prices.profiles.get(r.profile)
        if p is None:
            unpriced.append(f"profile {r.profile} (role {r.role})")
        else:
            price = p.base + p.per_cpu * (r.cpus or 0.0) + p.per_gb * (r.memory_gb or 0.0)
            size = ", ".join(
                x
                for x in (f"{r.cpus:g} CPUs" if r.cpus else "", f"{r.memory_gb:g} GB" if r.memory_gb else "")
                if x
            )
            parts.append((f"role {r.role}: profile {r.profile}" + (f" ({size})" if size else ""), price))
        for vclass in r.volume_classes:
            if vclass in prices.volumes:
                parts.append((f"role {r.role}: volume of class {vclass}", prices.volumes[vclass]))
            else:
                unpriced.append(f"volume class {vclass} (role {r.role})")
        if r.link_class is not None:
            if r.link_class in prices.links:
                parts.append((f"role {r.role}: link {r.link_class}", prices.links[r.link_class]))
            else:
                unpriced.append(f"link {r.link_class} (role {r.role})")
    total = sum(price for _, price in parts) if parts else None
    return Cost(total, prices.currency, prices.basis, parts, unpriced)


def per_capacity(cost: float | None, capacity: float | None, per: float = PER) -> float | None:
    """The price of ``per`` units of capacity a second (``per 1,000 req/s``)."""
    if cost is None or not capacity or capacity <= 0:
        return None
    return cost / (capacity / per)
