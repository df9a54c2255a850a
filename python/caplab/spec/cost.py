"""Prices as the study file gives them; analysis/cost.py adds them up."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from caplab.spec.fields import Scalar, Strict


class ProfilePriceSpec(Strict):
    base: float = Field(default=0.0, ge=0)
    per_cpu: float = Field(default=0.0, ge=0)
    per_gb: float = Field(default=0.0, ge=0)


def _price(value: Any) -> Any:
    return {"base": value} if isinstance(value, int | float) and not isinstance(value, bool) else value


class ConfigurationPriceSpec(Strict):
    when: dict[str, Scalar] = Field(default_factory=dict)
    """Factor values the price applies to (empty: every configuration)."""
    price: float = Field(ge=0)


class CostSpec(Strict):
    """Prices: per profile (a number, or base + per_cpu + per_gb), per volume class, per link class,
    or per whole configuration matched on factor values; a purchase or per hour."""

    currency: str = "USD"
    basis: Literal["purchase", "hour"] = "purchase"
    profiles: dict[str, Annotated[ProfilePriceSpec, BeforeValidator(_price)]] = Field(default_factory=dict)
    volumes: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    links: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    configurations: list[ConfigurationPriceSpec] = Field(default_factory=list)
