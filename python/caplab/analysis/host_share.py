"""Whose is the host's CPU? On one machine the generator (caplab's process, its engine threads and
its daemons: link delay, device models) and the system under test share the cores, so a busy host
is the system's limit only when the system's roles account for it (DESIGN.md, measurement rule 9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

GENERATOR_SYSTEM_SHARE = 0.5
"""The generator's CPU (caplab's process, its threads and daemons), as a share of the system's roles'
together, from which a busy host is not the system's limit: with the generator using half as much
as the system, or more, a bigger server would not have carried much more here — the host was the
generator's limit as much as the system's (the issue's search: caplab 110 % of a core, the server's
one worker 73 %). Compared with the system rather than with the host's busy total, so other
programs on a shared machine do not make a system-bound search look generator-bound."""


def host_not_the_systems(
    busy: float | None, system: float, own: float, roles: bool = True, *, others: bool = True
) -> str | None:
    """Why a busy host is not the system's limit, or None when the system's roles account for it.

    ``busy``: the host's CPU (% of one core, all processes); ``system``: the roles' summed CPU;
    ``own``: the generator's, its daemons included; ``roles``: whether any role was named;
    ``others``: whether other programs busier than the system count against it too (a late
    generator's crowding does; the limit at a capacity found names the generator only for its own
    share, and otherwise the host's CPU with every demand beside it)."""
    if not roles:
        return "no role of the system was named, so the host's busy CPU cannot be attributed to it"
    if not busy or busy <= 0:
        return None
    if own >= GENERATOR_SYSTEM_SHARE * system:
        return (
            f"the generator (caplab, its threads and daemons) used {own:.0f}% of a core against the "
            f"system's roles' {system:.0f}%, {own / busy:.0%} of the host's busy CPU ({busy:.0f}%): the "
            "host was the generator's limit as much as the system's"
        )
    if others and busy - system - own > system:
        return (
            f"the system's roles account for {system / busy:.0%} of the host's busy CPU ({busy:.0f}% of a "
            "core), other programs for more: the machine was busy with other work"
        )
    return None


def cpu_shares(
    resources: Mapping[str, Mapping[str, float]], roles: Iterable[str], role_key: str = "{}"
) -> tuple[float | None, float, float]:
    """(host busy, roles' sum, generator's) CPU in % of one core, from per-scope means; roles are
    looked up as ``role_key.format(name)`` (``"role:{}"`` for summarised scopes)."""
    host = resources.get("host") or {}
    system = sum((resources.get(role_key.format(r)) or {}).get("cpu_percent", 0.0) for r in roles)
    own = (resources.get("generator") or {}).get("cpu_percent", 0.0)
    return host.get("cpu_percent"), system, own
