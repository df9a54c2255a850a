"""SLO predicates evaluated per trial, with the reason when one fails (their syntax, parsed from
strings: caplab/grammar/slo.py).

p99 <= 50ms          latency percentile (p50 p90 p95 p99 p999 max mean), from the intended send
errors <= 0.1%       failed / sent
throughput >= 0.99*offered   no backlog: the offered rate less what the window left behind
                     (queue growth beyond its noise, drops, errors; implied for open-model searches)
cpu <= 75%           host CPU, share of all cores
cpu[server] <= 75%   a role's CPU, 100 % = one core (as top shows it); on a hardware profile,
                     100 % = its profile's CPUs (the host CPUs its quota grants)
cpu[web+db] <= 75%   the roles' CPU summed, against their quotas summed — a quota the roles share
                     (one combined server: consolidation's together) counted once
mem <= 80%           the host's memory in use (total − available), share of its total
mem[db] <= 80%       a role's memory, share of its hardware profile's limit
disk_busy <= 90%     the busiest disk
app[processed_per_s] >= 0.99*offered   one of the SUT's own figures (sut.metrics: in a study),
app[queue_depth] <= 1000               against a number or a share of the offered rate
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from caplab import grammar
from caplab.analysis.scope import HOST_CPU, ResourceScope, ScopeKind, role_scope
from caplab.grammar.slo import LATENCY as _LATENCY
from caplab.grammar.slo import SloError as SloError  # callers catch it from here
from caplab.grammar.slo import SloTerm

_PERCENTILES = ("p50", "p90", "p95", "p99", "p999")


@dataclass(frozen=True)
class TrialFigures:
    """What an SLO is evaluated against: one trial's figures."""

    offered_rate: float | None
    throughput: float
    sent: int
    errors: int
    latency_ms: dict[str, float | None]
    resources: dict[str, dict[str, float]]
    cores: int
    machines: Mapping[str, str] = field(default_factory=dict)
    """Role → the machine it shares with other roles (one combined server's quota); a role not
    named has its quota to itself."""
    carried: float | None = None
    """Open model: the offered rate less what the window left behind (analysis/backlog.py) — what
    ``throughput >= k*offered``, the no-backlog check, judges. None: the in-window throughput."""


@dataclass(frozen=True)
class Verdict:
    slo: str
    passed: bool
    observed: float | None
    reason: str
    bound: float | None = None
    """The threshold the observation was held to (for a rate relative to the offered load, that
    fraction of this trial's offered rate)."""


@dataclass(frozen=True)
class Slo(SloTerm):
    """A parsed predicate (caplab.grammar's `SloTerm`) that evaluates: what it observes in a
    trial's figures, against which bound, and the reason it passes or fails."""

    @classmethod
    def of(cls, term: SloTerm) -> Slo:
        return cls(**asdict(term))

    def evaluate(self, t: TrialFigures) -> Verdict:
        observed = self.observe(t)
        if observed is None and self.metric in _PERCENTILES and self.op in ("<=", "<"):
            # Too few requests for this percentile: the maximum bounds it from above, so a maximum
            # within the limit passes; one beyond it leaves the percentile unknown, which fails.
            top = t.latency_ms.get("max")
            if top is not None and top <= self.value:
                return Verdict(
                    self.text, True, top, f"{self.text}: max {top:.4g}ms (too few samples for {self.metric})"
                )
            return Verdict(self.text, False, None, f"{self.text}: too few requests to measure {self.metric}")
        if observed is None:
            return Verdict(self.text, False, None, f"{self.text}: no data for {self.metric}")
        bound = self.value * (t.offered_rate or 0.0) if self.relative_to_offered else self.value
        ok = {"<=": observed <= bound, "<": observed < bound, ">=": observed >= bound, ">": observed > bound}[
            self.op
        ]
        shown = f"{observed:.4g}{self.unit} {'meets' if ok else 'fails'} {self.op} {bound:.4g}{self.unit}"
        return Verdict(self.text, ok, observed, f"{self.text}: {shown}{self._on_quota(t)}", bound)

    def _on_quota(self, t: TrialFigures) -> str:
        """How a role's CPU on a profile reads both ways: of its quota, and of one host core."""
        if self.metric != "cpu" or self.role is None or "+" in self.role:
            return ""
        m = t.resources.get(self.role) or {}
        quota, cpu = m.get("quota_cpus"), m.get("cpu_percent")
        if not quota or cpu is None:
            return ""
        return f" (of its profile's quota of {quota:g} host CPUs; {cpu:.4g}% of one host core)"

    @property
    def ceiling(self) -> str | None:
        """The resource this predicate holds to an acceptable maximum (``cpu[transport+access]<=75%``:
        ``cpu:transport+access``; ``cpu<=75%``: ``cpu:host``), named as the limit analysis names
        it, or None."""
        if self.metric != "cpu" or self.op not in ("<=", "<"):
            return None
        return (
            ResourceScope(ScopeKind.CPU, self.role).format() if self.role is not None else HOST_CPU.format()
        )

    @property
    def unit(self) -> str:
        if self.metric in _LATENCY:
            return "ms"
        if self.metric in ("errors", "cpu", "disk_busy", "mem"):
            return "%"
        if self.metric == "app":
            return ""
        return "/s"

    def observe(self, t: TrialFigures) -> float | None:
        if self.metric in _LATENCY:
            return t.latency_ms.get(self.metric)
        if self.metric == "errors":
            return 100.0 * t.errors / t.sent if t.sent else 0.0
        if self.metric == "throughput":
            # Against the offered load the question is whether a backlog built, not how many
            # replies happened to land inside the window (analysis/backlog.py).
            return t.carried if self.relative_to_offered and t.carried is not None else t.throughput
        if self.metric == "cpu":
            if self.role is not None:
                return _roles_cpu(self.role.split("+"), t)
            host = t.resources.get("host") or {}
            cpu = host.get("cpu_percent")
            return cpu / max(t.cores, 1) if cpu is not None else None
        if self.metric == "mem":
            return (t.resources.get(self.role or "host") or {}).get("mem_percent")
        if self.metric == "disk_busy":
            return (t.resources.get("host") or {}).get("disk_busy_percent")
        if self.metric == "app" and self.role is not None:
            return (t.resources.get("app") or {}).get(self.role)
        return None


def _roles_cpu(roles: list[str], t: TrialFigures) -> float | None:
    """The roles' CPU together: used summed (100 % = one host core) against the host CPUs their
    quotas grant, each machine's quota once; without quotas, the sum as a share of one core."""
    used = [(t.resources.get(r) or {}).get("cpu_percent") for r in roles]
    if any(u is None for u in used):
        return None
    quotas: dict[str, float | None] = {}
    for r in roles:
        quotas.setdefault(t.machines.get(r, role_scope(r)), (t.resources.get(r) or {}).get("quota_cpus"))
    total = sum(u for u in used if u is not None)
    if any(not q for q in quotas.values()):
        return total
    return total / sum(q for q in quotas.values() if q)


def parse_slo(text: str) -> Slo:
    """Parses one predicate (caplab.grammar's syntax) into one that evaluates; raises SloError
    naming what is wrong."""
    return Slo.of(grammar.parse_slo(text))


def evaluate(slos: list[Slo], trial: TrialFigures) -> list[Verdict]:
    return [s.evaluate(trial) for s in slos]


def sustainable(load: float, slos: list[Slo], verdicts: list[Verdict]) -> float | None:
    """The highest load this trial's own figures say would have passed its failed rate SLOs: a
    system that processed 1,100/s against ``>= 0.95*offered`` sustains about 1,100 / 0.95 offered.
    None when no rate-relative-to-offered SLO failed (latency says nothing of how far to go)."""
    estimates = [
        load * v.observed / v.bound
        for slo, v in zip(slos, verdicts, strict=True)
        if not v.passed
        and slo.relative_to_offered
        and slo.op in (">=", ">")
        and v.observed is not None
        and v.bound
    ]
    return min(estimates) if estimates else None


def as_dict(v: Verdict) -> dict[str, Any]:
    return {"slo": v.slo, "passed": v.passed, "observed": v.observed, "bound": v.bound, "reason": v.reason}
