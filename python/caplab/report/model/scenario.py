"""What was tested and how, read back from the study file stored with the study: the target, the
load, the SLO, the search, the SUT's roles and the goal the report sizes for.

The stored text is the file as written (passwords already masked by the store), so factor
placeholders such as ``{workers}`` appear as the user wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from caplab import units as u
from caplab.report.model.types import Goal, Scenario, SearchSettings, Target
from caplab.store.document import CellRecord, StudyRecord
from caplab.units import parse_duration, scrub, varying_factors

DEFAULT_HEADROOM = 0.25


def parse_spec(text: str | None) -> dict[str, Any]:
    """The study file as a dict; empty when absent or unreadable (a report must still be written)."""
    if not text:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def study_spec(study: StudyRecord) -> dict[str, Any]:
    """The study file the report reads its scenario from (as written, ``parse_spec``)."""
    return parse_spec(study.spec)


def _fraction(value: Any, default: float) -> float:
    """``25%``, ``0.25`` (and, leniently, ``25``) → 0.25."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100.0
        except ValueError:
            return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 100.0 if value >= 1 else float(value)
    return default


def _seconds(value: Any) -> float | None:
    try:
        return parse_duration(value) if value is not None else None
    except (ValueError, TypeError):
        return None


def goal_of(spec: dict[str, Any]) -> Goal | None:
    """``{rate, headroom, for_each}`` from the study's ``goal:`` (with ``unit: users`` for a goal of
    users); None when no goal (or no usable rate or number of users) was given."""
    goal = spec.get("goal")
    if not isinstance(goal, dict):
        return None
    users = goal.get("users")
    amount = users if users is not None else goal.get("rate")
    if not isinstance(amount, int | float) or isinstance(amount, bool) or amount <= 0:
        return None
    for_each = goal.get("for_each")
    out: Goal = {
        "rate": float(amount),
        "headroom": _fraction(goal.get("headroom"), DEFAULT_HEADROOM),
        "for_each": [str(x) for x in for_each] if isinstance(for_each, list) else [],
    }
    if users is not None:
        out["unit"] = "users"
    return out


def goal_text(goal: Goal) -> str:
    """The goal's load in its unit: ``500/s`` or ``5,000 users``."""
    return u.load(goal["rate"], goal.get("unit", "req/s"))


def _target(spec: dict[str, Any]) -> Target:
    target = spec.get("target") or {}
    if not isinstance(target, dict):
        return {}
    for protocol in ("http", "tcp"):
        t = target.get(protocol)
        if isinstance(t, dict):
            return {
                "protocol": protocol,
                "url": t.get("url"),
                "method": t.get("method", "GET") if protocol == "http" else None,
                "framing": t.get("framing") if protocol == "tcp" else None,
                "body": "from " + str(t["body_file"]) if t.get("body_file") else t.get("body"),
            }
    mail = target.get("mail")
    if isinstance(mail, dict):
        urls = [str(mail[p]) for p in ("smtp", "imap") if mail.get(p)]
        size = mail.get("message_size")
        return {
            "protocol": " and ".join(url.partition("://")[0] for url in urls),
            "url": " · ".join(urls),
            "method": None,
            "framing": None,
            "body": f"messages of {size} bytes"
            if isinstance(size, int)
            else (f"messages of {size}" if size else None),
        }
    pg = target.get("postgres")
    if isinstance(pg, dict):
        script = (
            "from " + str(pg["sql_file"])
            if pg.get("sql_file")
            else f"pgbench's {pg.get('workload') or 'tpcb'}"
        )
        return {
            "protocol": "postgresql",
            "url": scrub(str(pg.get("url"))),
            "method": None,
            "framing": None,
            "body": script + (", with a ledger of acknowledged transactions" if pg.get("ledger") else ""),
        }
    return {}


def _section(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = spec.get(name)
    return value if isinstance(value, dict) else None


def scenario(spec: dict[str, Any]) -> Scenario:
    """The scenario and workload as the report states them."""
    load: dict[str, Any] = _section(spec, "load") or {}
    search = _section(spec, "search")
    sut: dict[str, Any] = _section(spec, "sut") or {}
    slo = [str(s) for s in spec.get("slo") or []] + [str(s) for s in (search or {}).get("slo") or []]
    usage = load.get("usage") if isinstance(load.get("usage"), dict) else None
    closed = load.get("model") == "closed" or (("users" in load or usage) and load.get("model") != "open")
    out: Scenario = {
        "description": spec.get("description"),
        "target": _target(spec),
        "model": "closed" if closed else "open",
        "rate": load.get("rate"),
        "users": load.get("users"),
        "think_s": _seconds(load.get("think")),
        "usage": _usage_text(usage),
        "schedule": load.get("schedule", "constant"),
        "duration_s": _seconds(load.get("duration", "30s")),
        "warmup_s": _seconds(load.get("warmup", 0)),
        "repeat": load.get("repeat", 1),
        "slo": slo,
        "search": None,
        "sut_start": sut.get("start"),
        "roles": sorted((sut.get("roles") or {}).keys()) if isinstance(sut.get("roles"), dict) else [],
        "app_metrics": bool(sut.get("metrics")),
    }
    if search is not None:
        settings: SearchSettings = {
            "precision": _fraction(search.get("precision"), 0.05),
            "trial_s": _seconds(search.get("trial", "3s")),
            "confirm_s": _seconds(search.get("confirm")) or out["duration_s"],
            "repeats": search.get("repeats", 3),
            "start": search.get("start"),
            "max": search.get("max"),
        }
        out["search"] = settings
    return out


def _usage_text(usage: dict[str, Any] | None) -> str | None:
    """A usage profile's actions and their rates as written: ``send 16, read {reads} an hour``."""
    actions = (usage or {}).get("actions")
    if not isinstance(actions, dict) or not actions:
        return None
    parts = []
    for name, a in actions.items():
        if isinstance(a, dict):
            hourly, daily = a.get("per_hour"), a.get("per_day")
            parts.append(f"{name} {hourly} an hour" if hourly is not None else f"{name} {daily} a day")
    return ", ".join(parts) or None


def naming_factors(spec: dict[str, Any], cells: Sequence[CellRecord]) -> list[str]:
    """The factors that name a cell: those that take more than one value in the study (a factor
    held at one value is said once, in the matrix, not in every label), except that a ``zip:``
    group (factors that move together, e.g. a case name with its command line) is named by its
    first factor alone. A study with no varying factor names its cells by all of them."""
    names = list(dict.fromkeys(k for c in cells for k in c.factors))
    varied = varying_factors([{"factors": c.factors} for c in cells])
    factors = spec.get("factors")
    group = factors.get("zip") if isinstance(factors, dict) else None
    followers = set(list(group)[1:]) if isinstance(group, dict) and len(group) >= 2 else set()
    return [n for n in varied if n not in followers] or names
