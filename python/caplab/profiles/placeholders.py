"""``{volume.NAME}`` and ``{address.ROLE}`` in a SUT's commands and the target URL: the mount point
of a role's volume and the address of a role's network namespace (loopback when its profile has
no link), known only once a cell's hardware exists. The study file is checked against the same
resolution before any cell runs."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{(volume|address)\.([A-Za-z0-9_.-]+)\}")


def placeholders(text: str) -> list[tuple[str, str]]:
    """Every ``(kind, key)`` the text refers to: ``("volume", "data")``, ``("address", "web")``."""
    return [(m.group(1), m.group(2)) for m in _PLACEHOLDER.finditer(text)]


def volume_key(key: str, volumes: Mapping[str, object]) -> str:
    """The ``role/volume`` a ``{volume.KEY}`` names: ``NAME`` when one role has a volume of that
    name, ``ROLE.NAME`` otherwise. Raises ``ValueError`` saying which spellings exist."""
    owners = [k for k in volumes if k.split("/", 1)[1] == key]
    if len(owners) == 1:
        return owners[0]
    role, _, name = key.partition(".")
    if name and f"{role}/{name}" in volumes:
        return f"{role}/{name}"
    known = ", ".join(sorted(k.replace("/", ".") for k in volumes)) or "none"
    if len(owners) > 1:
        raise ValueError(
            f"{{volume.{key}}} is ambiguous: roles {', '.join(o.split('/')[0] for o in owners)} each "
            f"have a volume {key!r}; write {{volume.ROLE.{key}}} (volumes: {known})"
        )
    raise ValueError(f"{{volume.{key}}}: no role's profile has that volume (volumes: {known})")


def check_placeholders(text: str, volumes: Mapping[str, object], addresses: Mapping[str, object]) -> None:
    """Raises ``ValueError`` for a reference that no role's profile provides."""
    for kind, key in placeholders(text):
        if kind == "volume":
            volume_key(key, volumes)
        elif key not in addresses:
            known = ", ".join(sorted(addresses)) or "none"
            raise ValueError(f"{{address.{key}}}: that role is on no profile (roles on one: {known})")


def fill(text: str, volumes: Mapping[str, object], addresses: Mapping[str, str]) -> str:
    """The text with every placeholder replaced by the cell's mount path or address."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) == "volume":
            return str(volumes[volume_key(m.group(2), volumes)])
        if m.group(2) not in addresses:
            raise ValueError(f"{{address.{m.group(2)}}}: that role is on no profile")
        return addresses[m.group(2)]

    return _PLACEHOLDER.sub(one, text)
