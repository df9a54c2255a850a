"""Judging the generator: when a late generator says something about the system, and when it
says only something about itself."""

from __future__ import annotations

from caplab.analysis.host_share import cpu_shares, host_not_the_systems
from caplab.analysis.limit import Limit
from caplab.analysis.slo import Slo
from caplab.engine.result import GeneratorFigures

CROWDED_HOST_CPU = 90.0
"""Host CPU (% of all cores) at which a late generator is taken to be crowded out by the SUT."""
OWN_LIMIT_THREAD = 0.9
"""A generator thread this busy is at its own limit, whatever else the machine does."""


def crowded_out(
    generator: GeneratorFigures, resources: dict[str, dict[str, float]], roles: list[str] | None = None
) -> str | None:
    """Why a late generator says something about the system rather than about itself, or None.

    On one machine, a system under test that takes every core also takes them from the generator,
    whose sends then leave late. That is a measurement — this load is more than the machine
    carries — so the trial fails like any other over capacity. A generator late with cores to
    spare, or with a thread of its own at its limit, is not: that still stops the search. Nor is
    a busy host the system's doing unless its roles account for it (`host_not_the_systems`): with no
    role named, with the generator a sizeable share of the busy CPU, or with other programs busier
    than the system, the generator is late on its own account."""
    host = resources.get("host") or {}
    util = host.get("cpu_util_percent")
    if util is None or util < CROWDED_HOST_CPU or generator.busiest_thread >= OWN_LIMIT_THREAD:
        return None
    busy, system, own = cpu_shares(resources, roles or [])
    if host_not_the_systems(busy, system, own, bool(roles)) is not None or _placed_apart(resources, roles):
        return None
    late = generator.lateness_p99_ms
    return (
        f"machine saturated: host CPU at {util:.0f}% of all cores, so the generator's sends ran "
        f"{late or 0:.0f} ms late at p99 (its own busiest thread at {generator.busiest_thread:.0%})"
    )


def _placed_apart(resources: dict[str, dict[str, float]], roles: list[str] | None) -> bool:
    """Whether the system ran on CPUs of its own (each role's ``cpus`` short of the host's cores,
    which are its busy CPU over its utilisation): it cannot then have taken the generator's."""
    host = resources.get("host") or {}
    busy, util = host.get("cpu_percent"), host.get("cpu_util_percent")
    if not roles or not busy or not util:
        return False
    cores = busy / util
    allowed = [(resources.get(r) or {}).get("cpus") for r in roles]
    return all(a is not None and a < cores - 0.5 for a in allowed)


GENERATOR_SHARE = 0.25
"""A generator whose own send lateness at p99 reaches this share of the tightest latency bound being
judged has distorted the latency it measured: a failure at that load is not the system's."""
LATENCY_METRICS = frozenset({"p50", "p90", "p95", "p99", "p999", "max", "mean"})


TAIL_PERCENT = {"p50": 50.0, "p90": 10.0, "p95": 5.0, "p99": 1.0, "p999": 0.1, "max": 0.0, "mean": 10.0}
"""The share of requests (%) a latency statistic looks at beyond itself: p99 is decided by the slowest
1 %. A generator its CPU quota throttled in at least that share of its periods stalled, sends and reads
of replies alike, often enough to have made that tail itself (a mean is taken to feel a 10 % share)."""


def throttle_bound(slos: list[Slo]) -> Slo | None:
    """The latency bound most easily made by quota stalls: the one whose tail is thinnest."""
    bounds = [s for s in slos if s.metric in TAIL_PERCENT and s.op in ("<=", "<")]
    return min(bounds, key=lambda s: TAIL_PERCENT[s.metric]) if bounds else None


def generator_limited(
    generator: GeneratorFigures, slos: list[Slo], resources: dict[str, dict[str, float]] | None = None
) -> str | None:
    """Why a failed trial says more about the generator than about the system, or None.

    Latency is timed from the intended send, so every millisecond the generator sends late is
    charged to the system. When that lateness is a sizeable share of the bound (1 ms late against
    a 2 ms p99), a failure proves nothing about the system: the trial is inconclusive. A generator
    flagged saturated by the engine is judged by `crowded_out` and the search's stall rule."""
    bounds = [s for s in slos if s.metric in LATENCY_METRICS and s.op in ("<=", "<")]
    throttled = ((resources or {}).get("generator") or {}).get("throttled_percent")
    tail = throttle_bound(slos)
    if tail is not None and throttled and throttled >= TAIL_PERCENT[tail.metric]:
        return (
            f"inconclusive — generator-limited: its CPU quota throttled it in {throttled:.1f}% of periods, "
            f"stalling its sends and its reads of replies alike — as large a share as the tail {tail.text} "
            "looks at"
        )
    late = generator.lateness_p99_ms
    if not bounds or late is None:
        return None
    tightest = min(bounds, key=lambda s: s.value)
    if late < GENERATOR_SHARE * tightest.value:
        return None
    return (
        f"inconclusive — generator-limited: its own sends ran {late:.2f} ms late at p99, "
        f"{late / tightest.value:.0%} of the {tightest.text} bound"
    )


def generator_limit(lower_bound: float | None, unit: str, reason: str) -> Limit:
    """The limit named when the search stopped at the generator: a floor for the capacity, the
    generator as what limits it here, never the system."""
    floor = f"capacity ≥ {lower_bound:,.0f}{unit}" if lower_bound else "no capacity measured"
    return {
        "resource": "generator",
        "kind": "generator",
        "utilization": None,
        "bound_rps": lower_bound,
        "evidence": {"demands": [], "signals": [reason]},
        "summary": f"generator: {floor} (the generator's limit here, not the system's): {reason}; "
        "run caplab with more cores, on another machine, or as several agents",
    }


CLOSED_LOOP_GAP = 1.5
"""A closed loop at the open search's concurrency this many times faster than the capacity found
says the open loop's limit was not the system's."""


def closed_loop_gap(capacity: float, users: int, closed_throughput: float) -> str | None:
    """When a closed loop with as many users as the open search kept in flight at its capacity
    ran far faster than that capacity, the system was not what held the open loop back: the
    generator (its schedule, its connections) or the network was. Little's law makes the two
    comparable: the same concurrency, the same system."""
    if capacity <= 0 or closed_throughput < CLOSED_LOOP_GAP * capacity:
        return None
    return (
        f"a closed loop of {users} users — the concurrency at capacity — reached {closed_throughput:,.0f}/s, "
        f"{closed_throughput / capacity:.1f}× the open-loop capacity of {capacity:,.0f}/s: that gap is the "
        "generator's or the network's, not the system's"
    )
