"""The SLO grammar: ``METRIC[NAME] OP VALUE``, one predicate a trial must meet.

p99 <= 50ms          latency percentile (p50 p90 p95 p99 p999 max mean), held in ms
errors <= 0.1%       failed / sent
throughput >= 0.99*offered   a rate (500/s) or a share of the offered rate
cpu <= 75%           host CPU; cpu[server], cpu[web+db]: a role's, or roles' summed
mem <= 80%           host memory; mem[db]: a role's
disk_busy <= 90%     the busiest disk
app[processed_per_s] >= 0.99*offered   one of the SUT's own figures

What each metric measures, and how a verdict reads, is analysis/slo.py's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from caplab.units import parse_duration

LATENCY = ("p50", "p90", "p95", "p99", "p999", "max", "mean")
"""The latency metrics an SLO may bound, in ms."""

_PATTERN = re.compile(
    r"^\s*(?P<metric>[A-Za-z_0-9]+)(?:\[(?P<role>[^\]]+)\])?\s*(?P<op><=|>=|<|>)\s*(?P<value>.+?)\s*$"
)


class SloError(ValueError):
    """An SLO string that does not parse; the message says what would."""


@dataclass(frozen=True)
class SloTerm:
    """One parsed predicate: the metric (lower case), the role or figure it names (roles summed as
    ``a+b``, spaces stripped), the comparison, and the bound — ms for a latency, a percentage for a
    share, a rate or, with ``relative_to_offered``, a fraction of the offered rate."""

    text: str
    metric: str
    role: str | None
    op: str
    value: float
    relative_to_offered: bool = False


def parse_slo(text: str) -> SloTerm:
    """Parses one predicate; raises SloError naming what is wrong."""
    m = _PATTERN.match(text)
    if not m:
        raise SloError(f"{text!r}: expected METRIC OP VALUE, e.g. 'p99<=50ms', 'errors<=0.1%', 'cpu<=75%'")
    metric, role, op, raw = (
        m.group("metric").lower(),
        m.group("role"),
        m.group("op"),
        m.group("value").lower(),
    )
    if metric in LATENCY:
        return _latency_slo(text, metric, role, op, raw)
    if metric in ("errors", "cpu", "disk_busy"):
        return _share_slo(text, metric, role, op, raw)
    if metric == "mem":
        return SloTerm(text, metric, role, op, _percent(text, raw))
    if metric == "throughput":
        _no_role(text, role)
        return _rate_slo(text, metric, None, op, raw)
    if metric == "app":
        if not role or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", role):
            raise SloError(f"{text!r}: app takes the name of a figure, e.g. app[processed_per_s]")
        return _rate_slo(text, metric, role, op, raw)
    raise SloError(f"{text!r}: unknown metric {metric!r} (known: {_KNOWN})")


_KNOWN = ", ".join(
    [
        *LATENCY,
        "errors",
        "throughput",
        "cpu",
        "cpu[ROLE]",
        "cpu[ROLE+ROLE]",
        "mem",
        "mem[ROLE]",
        "disk_busy",
        "app[FIGURE]",
    ]
)
"""The metrics an SLO may name, as the error for an unknown one lists them."""


def _latency_slo(text: str, metric: str, role: str | None, op: str, raw: str) -> SloTerm:
    """A latency percentile against a duration with its unit (``p99<=50ms``), held in ms."""
    _no_role(text, role)
    if not re.fullmatch(r"\d+(\.\d+)?\s*(us|µs|ms|s|m)", raw):
        raise SloError(f"{text!r}: {raw!r} is not a latency with a unit (e.g. 50ms, 1s)")
    try:
        return SloTerm(text, metric, None, op, parse_duration(raw) * 1000.0)
    except ValueError as e:
        raise SloError(f"{text!r}: {raw!r} is not a latency (e.g. 50ms, 1s)") from e


def _share_slo(text: str, metric: str, role: str | None, op: str, raw: str) -> SloTerm:
    """A percentage: errors, the busiest disk, or CPU — the host's, or roles' added up
    (``cpu[transport+access]``, their names stripped of spaces)."""
    if metric != "cpu":
        _no_role(text, role)
    if role is not None and not all(part.strip() for part in role.split("+")):
        raise SloError(f"{text!r}: name the roles to add up, e.g. cpu[transport+access]")
    if role is not None:
        role = "+".join(part.strip() for part in role.split("+"))
    return SloTerm(text, metric, role, op, _percent(text, raw))


def _rate_slo(text: str, metric: str, role: str | None, op: str, raw: str) -> SloTerm:
    """A bound that is a number (a rate: ``500/s``) or a share of the offered rate (``0.99*offered``)."""
    rel = re.fullmatch(r"(\d+(?:\.\d+)?)\s*\*\s*offered", raw)
    if rel:
        return SloTerm(text, metric, role, op, _bound(text, rel.group(1)), relative_to_offered=True)
    try:
        return SloTerm(text, metric, role, op, _bound(text, raw.removesuffix("/s")))
    except SloError as e:
        raise SloError(f"{text!r}: the bound must be a rate (500/s) or a share (0.99*offered)") from e


def _no_role(text: str, role: str | None) -> None:
    if role is not None:
        raise SloError(f"{text!r}: only cpu, mem and app take a [name]")


def _percent(text: str, raw: str) -> float:
    if not raw.endswith("%"):
        raise SloError(f"{text!r}: {raw!r} must be a percentage, e.g. 75%")
    return _bound(text, raw[:-1], f"{raw!r} is not a percentage")


def _bound(text: str, raw: str, what: str = "") -> float:
    """A finite, non-negative number (NaN would fail every trial, infinity pass every one)."""
    try:
        value = float(raw)
    except ValueError as e:
        raise SloError(f"{text!r}: {what or repr(raw) + ' is not a number'}") from e
    if not math.isfinite(value) or value < 0:
        raise SloError(f"{text!r}: the bound must be a finite number >= 0")
    return value
