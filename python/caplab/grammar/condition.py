"""The trigger grammar: ``METRIC[SCOPE] OP VALUE``, a condition an action during a trial waits for.

p99 > 50ms                 the load's latency percentile on its latest interval, held in ms
errors > 1%                failed share of the interval's finished requests
throughput < 500/s         the interval's throughput
replay_lag_ms > 100        any other name: a collector's figure (``[scope]`` narrows it to one
                           scope); the name's last ``_word`` is its unit, which the bound may repeat

When it holds, and what it reads, is analysis/trigger.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from caplab.units import parse_duration

LATENCY = ("p50", "p90", "p95", "p99", "p999", "max", "mean")
"""The load's latency percentiles a condition may name, in ms."""

LOAD_METRICS = (*LATENCY, "errors", "throughput")
"""What the load measures itself; any other name is a collector's figure."""

_PATTERN = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z_0-9]*)(?:\[(?P<scope>[^\]]+)\])?\s*"
    r"(?P<op><=|>=|<|>)\s*(?P<value>.+?)\s*$"
)


class TriggerError(ValueError):
    """A condition that does not parse; the message says what would."""


@dataclass(frozen=True)
class ConditionTerm:
    """One parsed condition: the metric (lower case), the collector's scope it is narrowed to, the
    comparison, the bound (ms for a latency, % for errors, /s for throughput) and the unit a
    reading is written with (``ms``, ``%``, ``/s``, `` mb`` for ``send_lag_mb``)."""

    text: str
    metric: str
    scope: str | None
    op: str
    value: float
    unit: str = ""


def parse_condition(text: str) -> ConditionTerm:
    """Parses one condition; raises TriggerError naming what is wrong."""
    m = _PATTERN.match(text)
    if not m:
        raise TriggerError(
            f"{text!r}: expected METRIC OP VALUE, e.g. 'p99 > 50ms', 'errors > 1%', 'replay_lag_ms > 100'"
        )
    metric, scope, op, raw = m.group("metric").lower(), m.group("scope"), m.group("op"), m.group("value")
    raw = raw.strip().lower()
    if metric in LOAD_METRICS and scope is not None:
        raise TriggerError(f"{text!r}: only a collector's figure takes a [scope]")
    if metric in LATENCY:
        try:
            return ConditionTerm(text, metric, None, op, parse_duration(raw) * 1000.0, "ms")
        except ValueError as e:
            raise TriggerError(f"{text!r}: {raw!r} is not a latency with a unit (e.g. 50ms, 1s)") from e
    if metric == "errors":
        if not raw.endswith("%"):
            raise TriggerError(f"{text!r}: {raw!r} must be a percentage, e.g. 1%")
        return ConditionTerm(text, metric, None, op, _number(text, raw[:-1]), "%")
    if metric == "throughput":
        return ConditionTerm(text, metric, None, op, _number(text, raw.removesuffix("/s")), "/s")
    unit = metric.rsplit("_", 1)[-1] if "_" in metric else ""
    number = raw.removesuffix(unit).strip() if unit and raw.endswith(unit) else raw
    return ConditionTerm(text, metric, scope, op, _number(text, number), unit and f" {unit}")


def _number(text: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise TriggerError(f"{text!r}: {raw!r} is not a number") from None
