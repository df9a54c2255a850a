"""The transform: an HL7 v2 message parsed in full (python-hl7) and mapped to a normalised JSON
document, the channel's one real piece of CPU work.

ADT (admit, transfer, discharge, update…) maps to a patient and a visit; ORU^R01 to a patient, the
orders and their observations; any other type to its header (and patient, if there is a PID).
Field positions follow HL7 v2.5 (PID-3 identifiers, PID-5 name, PID-7 birth date, PID-8 sex,
PID-11 address; PV1-2 patient class, PV1-3 location, PV1-7 attending, PV1-44 admitted; OBR-2/3
order numbers, OBR-4 service, OBR-7 observed; OBX-3 observation, OBX-5 value, OBX-6 units, OBX-7
reference range, OBX-8 flag, OBX-11 status). Escape sequences (``\\F\\`` …) are decoded.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import hl7

from caplab.systems.hl7.message import segments


class TransformFailed(ValueError):
    """The message was queued but cannot be mapped; it is marked failed, with this reason."""


class Parsed:
    """A parsed message, its segments indexed by name once (python-hl7's own lookup rescans the
    message on every field)."""

    def __init__(self, body: str) -> None:
        try:
            self.message = hl7.parse("\r".join(segments(body)))
        except (hl7.ParseException, IndexError, ValueError) as e:
            raise TransformFailed(f"unparseable: {e}") from None
        self.by_name: dict[str, list[Any]] = {}
        for seg in self.message:
            self.by_name.setdefault(str(seg[0]), []).append(seg)

    def has(self, name: str) -> bool:
        return name in self.by_name

    def all(self, name: str) -> list[Any]:
        return self.by_name.get(name, [])

    def field(self, name: str, n: int, component: int = 1, repeat: int = 1) -> str:
        segs = self.by_name.get(name)
        return self.of(segs[0], n, component, repeat) if segs else ""

    def of(self, segment: Any, n: int, component: int = 1, repeat: int = 1) -> str:
        """Field ``n`` (component, repetition) of one segment, unescaped; "" if absent."""
        try:
            value = segment.extract_field(1, n, repeat, component)
        except (IndexError, KeyError):
            return ""
        text = str(value) if value else ""
        return str(self.message.unescape(text)) if "\\" in text else text

    def repeats(self, name: str, n: int) -> int:
        segs = self.by_name.get(name)
        if not segs or len(segs[0]) <= n:
            return 0
        value = segs[0][n]
        return len(value) if isinstance(value, hl7.Field) and isinstance(value[0], hl7.Repetition) else 1


def transform(body: str) -> bytes:
    """The normalised document of one message, as UTF-8 JSON."""
    msg = Parsed(body)
    message_type, trigger = msg.field("MSH", 9, 1), msg.field("MSH", 9, 2)
    doc: dict[str, Any] = {
        "control_id": msg.field("MSH", 10),
        "type": f"{message_type}^{trigger}" if trigger else message_type,
        "sent_at": _timestamp(msg.field("MSH", 7)),
        "from": {"application": msg.field("MSH", 3), "facility": msg.field("MSH", 4)},
        "to": {"application": msg.field("MSH", 5), "facility": msg.field("MSH", 6)},
        "version": msg.field("MSH", 12),
    }
    if not doc["control_id"]:
        raise TransformFailed("MSH-10 message control id missing")
    if msg.has("PID"):
        doc["patient"] = _patient(msg)
    if msg.has("PV1"):
        doc["visit"] = {
            "class": msg.field("PV1", 2),
            "location": "/".join(p for p in (msg.field("PV1", 3, c) for c in (1, 2, 3)) if p),
            "attending": _name(msg.field("PV1", 7, 3), msg.field("PV1", 7, 4), msg.field("PV1", 7, 2)),
            "admitted_at": _timestamp(msg.field("PV1", 44)),
        }
    if message_type == "ORU":
        doc["orders"] = _orders(msg)
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _patient(msg: Parsed) -> dict[str, Any]:
    identifiers = []
    for r in range(1, max(1, msg.repeats("PID", 3)) + 1):
        value = msg.field("PID", 3, 1, r)
        if value:
            identifiers.append({"id": value, "authority": msg.field("PID", 3, 4, r)})
    return {
        "id": identifiers[0]["id"] if identifiers else "",
        "identifiers": identifiers,
        "name": _name(msg.field("PID", 5, 2), msg.field("PID", 5, 3), msg.field("PID", 5, 1)),
        "birth_date": _date(msg.field("PID", 7)),
        "sex": {"M": "male", "F": "female", "O": "other"}.get(msg.field("PID", 8), "unknown"),
        "address": {
            "street": msg.field("PID", 11, 1),
            "city": msg.field("PID", 11, 3),
            "state": msg.field("PID", 11, 4),
            "postcode": msg.field("PID", 11, 5),
        },
    }


def _orders(msg: Parsed) -> list[dict[str, Any]]:
    """Each OBR with the OBX segments that follow it (OBX before any OBR hang off an empty order)."""
    orders: list[dict[str, Any]] = []
    for seg in msg.message:
        name = str(seg[0])
        if name == "OBR":
            orders.append(
                {
                    "placer": msg.of(seg, 2),
                    "filler": msg.of(seg, 3),
                    "service": {"code": msg.of(seg, 4, 1), "text": msg.of(seg, 4, 2)},
                    "observed_at": _timestamp(msg.of(seg, 7)),
                    "observations": [],
                }
            )
        elif name == "OBX":
            if not orders:
                orders.append({"observations": []})
            orders[-1]["observations"].append(_observation(msg, seg))
    return orders


def _observation(msg: Parsed, seg: Any) -> dict[str, Any]:
    value: str | float = msg.of(seg, 5)
    if msg.of(seg, 2) == "NM":
        with contextlib.suppress(ValueError):
            value = float(value)
    return {
        "code": msg.of(seg, 3, 1),
        "text": msg.of(seg, 3, 2),
        "value": value,
        "units": msg.of(seg, 6),
        "range": msg.of(seg, 7),
        "flag": msg.of(seg, 8),
        "status": msg.of(seg, 11),
    }


def _name(given: str, middle: str, family: str) -> dict[str, str]:
    return {"family": family, "given": given, "middle": middle}


def _date(ts: str) -> str:
    return f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}" if len(ts) >= 8 and ts[:8].isdigit() else ""


def _timestamp(ts: str) -> str:
    if len(ts) < 8 or not ts[:8].isdigit():
        return ""
    clock = ts[8:14]
    if len(clock) >= 4 and clock.isdigit():
        return f"{_date(ts)}T{clock[0:2]}:{clock[2:4]}:{clock[4:6] or '00'}"
    return _date(ts)
