"""What was tested and how, read back from the study file stored with the study: the target, the
load, the SLO, the search, the SUT's roles and the goal the report sizes for.

The stored text is the file as written (passwords already masked by the store), so factor
placeholders such as ``{workers}`` appear as the user wrote them; what it left out is the spec's
default, filled in by ``spec_defaults`` from the study as validated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml

from caplab import units as u
from caplab.json_types import JsonObject, as_object, items, member, optional_member, text
from caplab.report.model.spec_defaults import DEFAULT_HEADROOM, DEFAULT_PRECISION, with_defaults
from caplab.report.model.types import Goal, Json, Scenario, SearchSettings, Target
from caplab.store.document import CellRecord, StudyRecord
from caplab.units import parse_duration, scrub, varying_factors

__all__ = [
    "DEFAULT_HEADROOM",
    "goal_of",
    "goal_text",
    "naming_factors",
    "parse_spec",
    "scenario",
    "study_spec",
]


def parse_spec(text: str | None) -> JsonObject:
    """The study file as a dict; empty when absent or unreadable (a report must still be written)."""
    if not text:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return as_object(data)


def study_spec(study: StudyRecord) -> JsonObject:
    """The study file the report reads its scenario from: as written (``parse_spec``), with the
    spec's defaults for the settings it left out (``spec_defaults.with_defaults``)."""
    return with_defaults(parse_spec(study.spec), study.validated)


def _fraction(value: object, default: float) -> float:
    """``25%``, ``0.25`` (and, leniently, ``25``) → 0.25."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100.0
        except ValueError:
            return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 100.0 if value >= 1 else float(value)
    return default


def _seconds(value: object) -> float | None:
    if not isinstance(value, str | int | float):
        return None
    try:
        return parse_duration(value)
    except (ValueError, TypeError):
        return None


def goal_of(spec: JsonObject) -> Goal | None:
    """``{rate, headroom, for_each}`` from the study's ``goal:`` (with ``unit: users`` for a goal of
    users); None when no goal (or no usable rate or number of users) was given."""
    goal = optional_member(spec, "goal")
    if goal is None:
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


def _target(spec: JsonObject) -> Target:
    target = member(spec, "target")
    for protocol in ("http", "tcp"):
        t = optional_member(target, protocol)
        if t is not None:
            return {
                "protocol": protocol,
                "url": text(t, "url"),
                "method": text(t, "method") if protocol == "http" else None,
                "framing": text(t, "framing") if protocol == "tcp" else None,
                "body": "from " + str(t["body_file"]) if t.get("body_file") else text(t, "body"),
            }
    mail = optional_member(target, "mail")
    if mail is not None:
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
    pg = optional_member(target, "postgres")
    if pg is not None:
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


def scenario(spec: JsonObject) -> Scenario:
    """The scenario and workload as the report states them (``spec`` as ``study_spec`` gives it,
    defaults filled in)."""
    load = member(spec, "load")
    search = optional_member(spec, "search")
    sut = member(spec, "sut")
    slo = [str(s) for s in items(spec, "slo")] + [str(s) for s in items(search or {}, "slo")]
    usage = optional_member(load, "usage")
    closed = load.get("model") == "closed" or (("users" in load or usage) and load.get("model") != "open")
    out: Scenario = {
        "description": text(spec, "description"),
        "target": _target(spec),
        "model": "closed" if closed else "open",
        "rate": as_written(load.get("rate")),
        "users": as_written(load.get("users")),
        "think_s": _seconds(load.get("think")),
        "usage": _usage_text(usage),
        "schedule": str(load.get("schedule")),
        "duration_s": _seconds(load.get("duration")),
        "warmup_s": _seconds(load.get("warmup")),
        "repeat": as_written(load.get("repeat")),
        "slo": slo,
        "search": None,
        "sut_start": text(sut, "start"),
        "roles": sorted(member(sut, "roles")),
        "app_metrics": bool(sut.get("metrics")),
    }
    if search is not None:
        out["search"] = _search(search, out["duration_s"])
    return out


def _search(search: JsonObject, duration_s: float | None) -> SearchSettings:
    """The search's settings (its confirmation trials last the load's duration unless given)."""
    precision = _fraction(search.get("precision"), DEFAULT_PRECISION)
    return {
        "precision": precision,
        "trial_s": _seconds(search.get("trial")),
        "confirm_s": _seconds(search.get("confirm")) or duration_s,
        "repeats": as_written(search.get("repeats")),
        "start": as_written(search.get("start")),
        "max": as_written(search.get("max")),
    }


def as_written(value: object) -> Json:
    """A setting as the study file wrote it (a number, or a factor's ``{placeholder}``)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): as_written(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_written(v) for v in value]
    return str(value)


def _usage_text(usage: JsonObject | None) -> str | None:
    """A usage profile's actions and their rates as written: ``send 16, read {reads} an hour``."""
    actions = member(usage or {}, "actions")
    parts = []
    for name, value in actions.items():
        if isinstance(value, Mapping):
            a = as_object(value)
            hourly, daily = a.get("per_hour"), a.get("per_day")
            parts.append(f"{name} {hourly} an hour" if hourly is not None else f"{name} {daily} a day")
    return ", ".join(parts) or None


def naming_factors(spec: JsonObject, cells: Sequence[CellRecord]) -> list[str]:
    """The factors that name a cell: those that take more than one value in the study (a factor
    held at one value is said once, in the matrix, not in every label), except that a ``zip:``
    group (factors that move together, e.g. a case name with its command line) is named by its
    first factor alone. A study with no varying factor names its cells by all of them."""
    names = list(dict.fromkeys(k for c in cells for k in c.factors))
    varied = varying_factors([{"factors": c.factors} for c in cells])
    group = optional_member(member(spec, "factors"), "zip")
    followers = set(list(group)[1:]) if group is not None and len(group) >= 2 else set()
    return [n for n in varied if n not in followers] or names
