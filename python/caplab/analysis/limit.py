"""The limit: which resource stops the system at its capacity.

Service demand D_r = U_r / X for each resource r (U its utilisation, 0–1; X the throughput): the
resource with the largest demand is the bottleneck and X / U_r the throughput bound it sets. A
role's CPU is utilised either as a share of the host's cores or, for a single busy thread, as a
share of one core — a single-threaded server is CPU-bound at one core on a machine that looks half
idle. When no resource is near saturation at capacity the limit is software (locks, pools,
serialisation, round trips), and the evidence says which signals point there.

A link can bound a system two ways: by its bandwidth (its bytes against its rate: a resource like
any other), or by its round trips — each message waits for k request/response exchanges with the
far side, each taking the link's round-trip time, so when k × RTT is a large share of the time per
message the system is latency-bound with the link's bandwidth almost idle (the Connexion paper's
database over gigabit: "nowhere near saturating the ethernet pipe"). No hardware resource is then
near saturation, and the limit is named ``network round trips`` instead of ``software``, with the
per-message figures as evidence. Round trips per message are counted from the link's packets (a
round trip is at least one packet each way: the smaller direction's packets per message, an upper
estimate where TCP sends bare acknowledgements); the RTT is the link's own, measured.

A role on a hardware profile is measured against its profile, not the host: its CPU against the
host CPUs its quota grants (``quota_cpus``), and its memory against its limit — a role near its
limit that hit it or lost a process to the OOM killer is named ``memory:ROLE`` whatever its CPU —
so is one the OOM killer stopped in the first trial above capacity, however little it used at it.
A quota also bounds a role that uses less than it on average: the kernel hands the quota out per
CPU in slices, and a bursty role runs out of it within a period and waits for the next one while
its mean use reads 55–60 % (measured on the mail and hl7 roles). A role throttled in most of its
quota's periods (``cpu_throttled_percent``) is held back by its profile's CPU, so that share
counts as its CPU's utilisation when it is the larger, as a volume's share of its ceiling does
(with no throughput bound drawn from it: throttled periods do not grow in proportion to the load).

A throttled volume has no busy time to read: its requests wait at the throttle, before the device.
A writer that syncs each record waits for one request at a time, and the throttle's slices then
leave a fifth to a third of the ceiling unused (a log writer fsyncing 4 KiB records on a 40-IOPS
volume counted 72–84 % of it, the process asleep in I/O throughout). Such a volume, busy at
capacity while the host's CPUs wait on I/O for at least half a core, is the limit too, and the wait
is its evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from caplab.analysis.host_share import cpu_shares, host_not_the_systems
from caplab.analysis.scope import HOST_CPU, ResourceScope, ScopeKind, role_scope

NEAR_SATURATION = 0.80
# A latency SLO usually gives out before a resource is fully busy: a resource this busy at
# capacity that is near saturation in the trial just above it is the limit too.
BUSY_AT_CAPACITY = 0.60
IO_WAIT_CORES = 0.5
"""The host's CPU time waiting on I/O, in cores, from which a throttled volume busy at capacity is
the limit: the system sits waiting on its requests."""
ROUND_TRIPS = "network round trips"
"""The limit's name when a link's round trips, not its bandwidth, bound the system."""
BUSIEST_THREAD = "busiest thread"
"""How a role's CPU demand's note begins when its busiest thread, not its share of the cores, is
what it is weighed by (``LimitKind.CPU_THREAD``)."""
ROUND_TRIP_SHARE = 0.50
"""The share of the time per message spent waiting on a link's round trips (k × RTT against
1/X) from which, with no hardware resource saturated, the round trips are named the limit."""


@dataclass(frozen=True)
class Demand:
    resource: str
    utilization: float
    demand_ms: float
    """Milliseconds of the resource each request uses: U / X."""
    bound_rps: float | None
    note: str

    def entry(self) -> DemandEntry:
        return DemandEntry(
            resource=self.resource,
            utilization=self.utilization,
            demand_ms=self.demand_ms,
            bound_rps=self.bound_rps,
            note=self.note,
        )


class DemandEntry(TypedDict):
    """A Demand in the limit's evidence (the results document, ``--json``)."""

    resource: str
    utilization: float
    demand_ms: float
    """Milliseconds of the resource each request uses: U / X."""
    bound_rps: float | None
    note: str


class ClosedLoopCheck(TypedDict):
    """A closed loop run at the open search's concurrency at capacity, and what it carried."""

    users: int
    throughput: float


class LimitEvidence(TypedDict, total=False):
    demands: list[DemandEntry]
    signals: list[str]
    memory: list[str]
    """Why a role's memory is named: its share of the limit, limit hits, faults, OOM kills."""
    closed_loop: ClosedLoopCheck
    host_shared: str
    """Why the host's busy CPU, the apparent limit, was not the system's (`host_not_the_systems`):
    the capacity found is then a floor, the generator's limit here."""


class Limit(TypedDict):
    """What bounds the system at its capacity (``hardware``, ``software``, ``generator``,
    ``unknown``), or for a fixed load the busiest resource (``not reached``)."""

    resource: str | None
    kind: str
    utilization: float | None
    bound_rps: float | None
    evidence: LimitEvidence
    summary: str


@dataclass(frozen=True)
class RoundTrips:
    """One link's round trips per message at a throughput, against the time per message."""

    scope: str
    per_message: float
    """Round trips per message: the smaller direction's packets a second over the throughput."""
    rtt_ms: float
    time_per_message_ms: float
    """1 / throughput: the time one message takes through the system's serial path."""

    @property
    def network_ms(self) -> float:
        """Milliseconds of each message spent waiting on this link's round trips: k × RTT."""
        return self.per_message * self.rtt_ms

    @property
    def share(self) -> float:
        return self.network_ms / self.time_per_message_ms if self.time_per_message_ms > 0 else 0.0

    @property
    def bound_rps(self) -> float | None:
        """The throughput at which round trips alone would fill the time per message."""
        return 1000.0 / self.network_ms if self.network_ms > 0 else None

    def describe(self) -> str:
        return (
            f"{self.scope}: {self.per_message:.2f} round trips per message × RTT {self.rtt_ms:.3f} ms = "
            f"{self.network_ms:.3f} ms against {self.time_per_message_ms:.3f} ms measured per message "
            f"(1/throughput): {self.share:.0%} of it waiting on the network"
            + (f" (≈ {self.share:.1f} exchanges in flight at once)" if self.share > 1.0 else "")
        )


def round_trips(throughput: float, scopes: dict[str, dict[str, float]]) -> list[RoundTrips]:
    """Each link's round trips per message, for links whose RTT and packets were measured; the
    largest share first."""
    if throughput <= 0:
        return []
    out = []
    for scope, m in scopes.items():
        named = ResourceScope.of(scope)
        if named is None or not named.is_network or m.get("rtt_ms") is None:
            continue
        packets = min(m.get("rx_packets_s", 0.0), m.get("tx_packets_s", 0.0))
        if packets <= 0:
            continue
        out.append(RoundTrips(scope, packets / throughput, m["rtt_ms"], 1000.0 / throughput))
    return sorted(out, key=lambda r: r.share, reverse=True)


def _on_machines(
    scopes: dict[str, dict[str, float]], roles: list[str], machines: Mapping[str, str]
) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Roles sharing one machine (one combined server) as one CPU scope: their CPU summed against
    the quota they share, counted once, and the machine's throttling and busiest thread. Returns
    the names to judge (``transport+access`` for a machine) and the scopes with those added."""
    groups: dict[str, list[str]] = {}
    for role in roles:
        groups.setdefault(machines.get(role, role_scope(role)), []).append(role)
    names, out = [], dict(scopes)
    for members in groups.values():
        present = [r for r in members if "cpu_percent" in scopes.get(role_scope(r), {})]
        if len(present) < 2:
            names += members
            continue
        parts = [scopes[role_scope(r)] for r in present]
        name = "+".join(present)
        out[role_scope(name)] = {
            **{k: v for k, v in parts[0].items() if k.startswith("mem_") or k == "oom_kills"},  # one cgroup
            "cpu_percent": sum(m["cpu_percent"] for m in parts),
            "quota_cpus": parts[0].get("quota_cpus", 0.0),
            "max_thread_cpu_percent": max(m.get("max_thread_cpu_percent", 0.0) for m in parts),
            "cpu_throttled_percent": max(m.get("cpu_throttled_percent", 0.0) for m in parts),
        }
        names.append(name)
    return names, out


def demands(
    throughput: float,
    scopes: dict[str, dict[str, float]],
    roles: list[str],
    machines: Mapping[str, str] | None = None,
) -> list[Demand]:
    """The demands table, largest first, from per-scope mean resource use at one load. Roles on
    one machine (``machines``: role → machine) are judged by the machine's CPU, which they share:
    each apart would read a fraction of the quota that holds them back together."""
    cores = max(scopes.get("host", {}).get("cores", 1.0), 1.0)
    if machines:
        roles, scopes = _on_machines(scopes, roles, machines)
    out = [d for role in roles if (d := _role_cpu(role, scopes.get(role_scope(role), {}), cores, throughput))]
    host = scopes.get("host", {})
    placed = _placed_cpus(scopes, roles, cores)
    present = [r for r in roles if "cpu_percent" in scopes.get(role_scope(r), {})]
    if placed is not None and len(present) > 1:
        # Placed on CPUs of its own, the system's roles share those and nothing else: together they
        # are its machine's CPU, named by the roles (``cpu:engine+db``) as roles sharing one
        # machine are, so no reader takes it for the host's, whose other CPUs ran the generator.
        used = sum(scopes[role_scope(r)]["cpu_percent"] for r in present) / (100.0 * placed)
        note = f"its roles together on the {placed:g} of {cores:g} CPUs placed for the system"
        out.append(_demand(ResourceScope(ScopeKind.CPU, "+".join(present)).format(), used, throughput, note))
    elif "cpu_percent" in host and roles:
        # The whole machine's CPU: the SUT competes with everything else here, the generator included.
        used = host["cpu_percent"] / (100.0 * cores)
        out.append(_demand(HOST_CPU.format(), used, throughput, f"all processes, {cores:g} cores"))
    for scope, m in scopes.items():
        named = ResourceScope.of(scope)
        if named is not None and named.is_storage:
            out += _storage(scope, m, throughput)
        if named is not None and named.is_network:
            out += _bandwidth(scope, m, throughput)
    return sorted(out, key=lambda d: d.utilization, reverse=True)


def _placed_cpus(scopes: dict[str, dict[str, float]], roles: list[str], cores: float) -> float | None:
    """How many CPUs the system ran on when a placement gave it CPUs of its own, else None: the
    host's CPU as a whole, the generator's included, is then no resource of the system's; its
    roles' CPUs together are judged instead."""
    allowed = [scopes.get(role_scope(r), {}).get("cpus") for r in roles]
    if not roles or any(a is None for a in allowed):
        return None
    widest = max(a or 0.0 for a in allowed)
    return widest if 0 < widest < cores else None


def _role_cpu(role: str, m: dict[str, float], cores: float, throughput: float) -> Demand | None:
    """A role's CPU demand, weighed by whichever holds it back most: its share of the host's cores
    or of its quota, its busiest thread against one core, or its quota's throttling; None when
    its CPU was not measured."""
    if "cpu_percent" not in m:
        return None
    quota = m.get("quota_cpus")
    cores = min(cores, m.get("cpus") or cores)  # placed on CPUs of its own: judged against those
    share = m["cpu_percent"] / (100.0 * (quota or cores))
    thread = m.get("max_thread_cpu_percent", 0.0) / 100.0
    throttled = m.get("cpu_throttled_percent", 0.0) / 100.0 if quota else 0.0
    by_throttling = throttled > max(share, thread)
    if m.get("host_level"):
        note = f"its host's whole CPU (node_exporter): {m['cpu_percent']:.0f}% of a core, {quota:g} cores"
    elif by_throttling:
        note = (
            f"throttled in {throttled:.0%} of its quota's periods ({m['cpu_percent']:.0f}% of a core, "
            f"{share:.0%} of its profile's quota of {quota:g} host CPUs, on average)"
        )
    elif quota and share >= thread:
        note = f"{m['cpu_percent']:.0f}% of a core against its profile's quota of {quota:g} host CPUs"
    elif thread > share:
        note = f"{BUSIEST_THREAD} at {thread:.0%} of one core ({m['cpu_percent']:.0f}% of a core in all)"
    else:
        note = f"{m['cpu_percent']:.0f}% of a core over {cores:g} cores"
    scope = ResourceScope(ScopeKind.CPU, role).format()
    demand = _demand(scope, max(share, thread, throttled), throughput, note)
    # Throttled periods do not grow in proportion to the load: no bound is drawn from them.
    return replace(demand, bound_rps=None) if by_throttling else demand


def _storage(scope: str, m: dict[str, float], throughput: float) -> list[Demand]:
    """A disk's or volume's demand, when it served requests: its busy time, or a volume's share
    of its class's ceiling when that is the larger."""
    if m.get("read_iops", 0.0) + m.get("write_iops", 0.0) <= 0:
        return []
    busy = m.get("busy_percent", 0.0) / 100.0
    note = f"busy {busy:.0%}, queue {m.get('avg_queue', 0.0):.1f}"
    throttled = m.get("throttle_percent", 0.0) / 100.0  # a volume against its class's ceiling
    if throttled > busy:
        busy, note = throttled, f"at {throttled:.0%} of its class's IOPS/bandwidth ceiling"
    return [_demand(scope, busy, throughput, note)]


def _bandwidth(scope: str, m: dict[str, float], throughput: float) -> list[Demand]:
    """A link's or interface's demand, when its rate is known: its busier direction against it."""
    if not m.get("link_mb_s"):
        return []
    use = max(m.get("rx_mb_s", 0.0), m.get("tx_mb_s", 0.0)) / m["link_mb_s"]
    return [_demand(scope, use, throughput, f"{use:.0%} of a {m['link_mb_s']:g} MB/s link")]


def memory_pressure(scopes: dict[str, dict[str, float]], roles: list[str]) -> dict[str, Any] | None:
    """The role most pressed against its profile's memory limit, if one is: an OOM kill, or use
    near the limit with the limit hit (reclaim) or major faults (its own pages read back from
    disk after the kernel evicted them to stay under the limit). None when no role is."""
    pressed = []
    for role in roles:
        m = scopes.get(role_scope(role), {})
        if "mem_percent" not in m:
            continue
        share, hits, kills = m["mem_percent"] / 100.0, m.get("mem_limit_hits", 0.0), m.get("oom_kills", 0.0)
        faults = m.get("mem_major_faults", 0.0)
        if kills > 0 or (share >= NEAR_SATURATION and (hits > 0 or faults > 0)):
            pressed.append((kills > 0, share, role, hits, faults, kills, m.get("mem_limit_mb")))
    if not pressed:
        return None
    _, share, role, hits, faults, kills, limit = max(pressed)
    evidence = [f"{share:.0%} of its {limit or 0:,.0f} MB limit"]
    if hits > 0:
        evidence.append("the limit was hit (the kernel reclaimed to stay under it)")
    if faults > 0:
        evidence.append(f"{faults:,.0f} major faults (pages read back from disk)")
    if kills > 0:
        evidence.append("the OOM killer killed a process")
    memory = ResourceScope(ScopeKind.MEMORY, role).format()
    return {"resource": memory, "utilization": share, "evidence": evidence}


def _memory_above(
    scopes: dict[str, dict[str, float]], above: tuple[str, float] | None
) -> dict[str, Any] | None:
    """A role whose memory gave out in the first trial above capacity (the OOM killer: the search
    took it as that load's failure) is the limit, however little of it the capacity load used."""
    scope = ResourceScope.of(above[0]) if above is not None else None
    if above is None or scope is None or scope.kind != ScopeKind.MEMORY:
        return None
    m = scopes.get(role_scope(scope.name), {})
    share = m["mem_percent"] / 100.0 if "mem_percent" in m else None
    used = (
        f"; at capacity it used {share:.0%} of its {m.get('mem_limit_mb', 0):,.0f} MB limit" if share else ""
    )
    return {
        "resource": above[0],
        "utilization": share,
        "evidence": [
            f"the first load above capacity ran it out of memory (the OOM killer killed a process){used}"
        ],
    }


def _demand(resource: str, utilization: float, throughput: float, note: str) -> Demand:
    demand_ms = 1000.0 * utilization / throughput if throughput > 0 else 0.0
    bound = throughput / utilization if utilization > 0 else None
    return Demand(resource, utilization, demand_ms, bound, note)


def same_resource(a: str, b: str) -> bool:
    """``cpu:transport+access`` is ``cpu:access+transport``: roles on one machine in any order.
    Names that are no resource scope (``network round trips``) are the same when equal."""
    scope_a, scope_b = ResourceScope.of(a), ResourceScope.of(b)
    if scope_a is None or scope_b is None:
        return a == b
    return scope_a.same_as(scope_b)


def _saturated(d: Demand | None, above: tuple[str, float] | None, ceiling: str | None = None) -> bool:
    if d is None:
        return False
    pushed = above is not None and above[0] == d.resource and above[1] >= NEAR_SATURATION
    held = ceiling is not None and same_resource(ceiling, d.resource)
    return d.utilization >= NEAR_SATURATION or ((pushed or held) and d.utilization >= BUSY_AT_CAPACITY)


def _waiting_on(d: Demand | None, scopes: dict[str, dict[str, float]]) -> str | None:
    """Why a throttled volume busy at capacity is the limit though short of its ceiling (the
    module's docstring), or None."""
    if d is None or d.utilization < BUSY_AT_CAPACITY or "throttle_percent" not in scopes.get(d.resource, {}):
        return None
    cores = scopes.get("host", {}).get("iowait_percent", 0.0) / 100.0
    if cores < IO_WAIT_CORES:
        return None
    return (
        f"{d.resource} at {d.utilization:.0%} of its ceiling while the host waited on I/O for "
        f"{cores:.2f} of a core: its requests wait at the throttle one after another"
    )


def find_limit(
    throughput: float,
    scopes: dict[str, dict[str, float]],
    roles: list[str],
    signals: list[str] | None = None,
    above: tuple[str, float] | None = None,
    machines: Mapping[str, str] | None = None,
    ceiling: str | None = None,
) -> Limit:
    """What bounds throughput at the capacity load, with its evidence.
    ``above``: the busiest resource and its utilisation in the first trial that failed above it;
    ``machines``: roles that share one machine (role → machine), judged by its CPU together;
    ``ceiling``: the resource whose SLO ceiling (``cpu[ROLE]<=75%``, the study's acceptable
    maximum) that trial failed — busy at capacity, it is the limit though short of saturation."""
    if machines:
        roles, scopes = _on_machines(scopes, roles, machines)
    table = demands(throughput, scopes, roles)
    evidence: LimitEvidence = {"demands": [d.entry() for d in table], "signals": list(signals or [])}
    if not roles:
        return {
            "resource": None,
            "kind": "unknown",
            "utilization": None,
            "bound_rps": None,
            "evidence": evidence,
            "summary": "unknown: no SUT process was named (a role, --sut-pid or --sut-match), so resource "
            "use cannot be attributed to the system under test",
        }
    memory = memory_pressure(scopes, roles) or _memory_above(scopes, above)
    if memory is not None:
        evidence["memory"] = memory["evidence"]
        return {
            "resource": memory["resource"],
            "kind": "hardware",
            "utilization": memory["utilization"],
            "bound_rps": None,
            "evidence": evidence,
            "summary": f"{memory['resource']}: " + "; ".join(memory["evidence"]),
        }
    top = _top(table, above, ceiling)
    # A placed system has no host CPU demand (its roles' CPUs are named instead): a host CPU on top
    # is one the generator shared.
    host_top = top is not None and top.resource == HOST_CPU.format()
    if top is not None and host_top and _saturated(top, above, ceiling):
        shared = host_not_the_systems(*cpu_shares(scopes, roles, "role:{}"), others=False)
        if shared is not None:
            return _host_shared(top, shared, evidence)
    trips = round_trips(throughput, scopes)
    waiting = _waiting_on(top, scopes)
    if waiting:
        evidence["signals"].append(waiting)
    if top is not None and (_saturated(top, above, ceiling) or waiting):
        # Held by its ceiling alone (short of saturation, not waited on): say so.
        held = (
            ceiling is not None
            and same_resource(ceiling, top.resource)
            and not waiting
            and top.utilization < NEAR_SATURATION
        )
        past = "the first load above capacity took it past its ceiling in the SLO"
        if held:
            evidence["signals"].append(past)
        # the link's round trips beside its bandwidth: which of the two bounds it, with numbers
        evidence["signals"].extend(t.describe() for t in trips)
        return {
            "resource": top.resource,
            "kind": "hardware",
            "utilization": top.utilization,
            "bound_rps": top.bound_rps,
            "evidence": evidence,
            "summary": f"{top.resource} at {top.utilization:.0%} ({top.note})"
            + (f"; it bounds throughput near {top.bound_rps:,.0f}/s" if top.bound_rps else "")
            + (f"; {past}" if held else ""),
        }
    busiest = (
        f"the busiest resource is {top.resource} at {top.utilization:.0%}"
        if top
        else "no resource was measured"
    )
    evidence["signals"].insert(0, f"no hardware resource near saturation at capacity: {busiest}")
    evidence["signals"].extend(t.describe() for t in trips)
    if trips and trips[0].share >= ROUND_TRIP_SHARE:
        worst = trips[0]
        return {
            "resource": ROUND_TRIPS,
            "kind": "software",
            "utilization": top.utilization if top else None,
            "bound_rps": worst.bound_rps,
            "evidence": evidence,
            "summary": f"{ROUND_TRIPS}, not bandwidth: {worst.describe()}; "
            + "; ".join(evidence["signals"][:1]),
        }
    return {
        "resource": "software",
        "kind": "software",
        "utilization": top.utilization if top else None,
        "bound_rps": None,
        "evidence": evidence,
        "summary": "software: " + "; ".join(evidence["signals"]),
    }


def _top(table: list[Demand], above: tuple[str, float] | None, ceiling: str | None) -> Demand | None:
    """The SUT's own resources first: the host's CPU includes everything else on the machine (the
    generator too), so it is named only when no resource of the SUT's explains the limit."""
    own = [d for d in table if d.resource != HOST_CPU.format()]
    host = [d for d in table if d.resource == HOST_CPU.format()]
    top = own[0] if own else None
    if host and (
        top is None or (not _saturated(top, above, ceiling) and _saturated(host[0], above, ceiling))
    ):
        top = host[0]
    return top


def _host_shared(host: Demand, why: str, evidence: LimitEvidence) -> Limit:
    """The host's CPU was the limit but not the system's: the generator's, on this machine."""
    evidence["host_shared"] = why
    evidence["signals"].append(why)
    return {
        "resource": "generator",
        "kind": "generator",
        "utilization": host.utilization,
        "bound_rps": None,
        "evidence": evidence,
        "summary": f"generator: the host's CPU at {host.utilization:.0%} bounded the load, but {why}; "
        "place the generator on CPUs of its own (--generator-cpus) or run it on another machine",
    }
