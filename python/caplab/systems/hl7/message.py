"""What the receiver reads of an HL7 v2 message before queueing it, and the acknowledgement.

The receiver reads only the header (MSH) and the patient id (PID-3): enough to index the message,
refuse what is not HL7 and acknowledge it. The full parse is the transform's work (transform.py),
so the receive path stays cheap and its answer arrives once the message is durable.

Segments end with a carriage return, as the standard says; a line feed or CR LF is taken too
(files written on other systems, and ``caplab load --body-file``, which reads text with universal
newlines, turn the CRs into LFs).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

SEGMENT_ID = re.compile(r"^[A-Z][A-Z0-9]{2}$")


class Malformed(ValueError):
    """Not an HL7 v2 message the engine can queue; the reason goes into the AE and the rejected table."""


@dataclass(frozen=True, slots=True)
class Header:
    control_id: str
    message_type: str
    """MSH-9 as sent, e.g. ``ADT^A01``."""
    patient_id: str | None
    """PID-3's first identifier, if there is a PID segment."""
    sending_application: str
    sending_facility: str
    receiving_application: str
    receiving_facility: str
    version: str
    field_separator: str
    component_separator: str


def decode(raw: bytes) -> str:
    """UTF-8, or Latin-1 (HL7 v2's usual 8-bit text) when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def segments(text: str) -> list[str]:
    """The segments, whatever the line ends; empty lines dropped."""
    return [s for s in text.replace("\r\n", "\r").replace("\n", "\r").split("\r") if s.strip()]


def read_header(text: str) -> Header:
    """The header fields and patient id, or Malformed with the reason."""
    segs = segments(text)
    if not segs or not segs[0].startswith("MSH") or len(segs[0]) < 8:
        raise Malformed("no MSH segment at the start")
    msh = segs[0]
    sep = msh[3]
    if sep.isalnum() or sep in " \r\n":
        raise Malformed(f"MSH-1 field separator {sep!r} is not a delimiter")
    fields = msh.split(sep)
    encoding = fields[1] if len(fields) > 1 else ""
    if len(encoding) < 4 or sep in encoding:
        raise Malformed("MSH-2 encoding characters missing")
    component = encoding[0]

    def msh_field(n: int) -> str:
        # MSH-1 is the separator itself, so MSH-n is fields[n - 1].
        return fields[n - 1].strip() if len(fields) >= n else ""

    control_id = msh_field(10)
    if not control_id:
        raise Malformed("MSH-10 message control id missing")
    message_type = msh_field(9)
    if not message_type:
        raise Malformed("MSH-9 message type missing")
    _check_segments(segs[1:], sep)
    return Header(
        control_id=control_id,
        message_type=message_type,
        patient_id=_patient_id(segs, sep, encoding),
        sending_application=msh_field(3),
        sending_facility=msh_field(4),
        receiving_application=msh_field(5),
        receiving_facility=msh_field(6),
        version=msh_field(12) or "2.5",
        field_separator=sep,
        component_separator=component,
    )


def _check_segments(segs: list[str], sep: str) -> None:
    """Every segment after MSH starts with a segment id and the field separator."""
    for seg in segs:
        if not SEGMENT_ID.match(seg[:3]) or (len(seg) > 3 and seg[3] != sep):
            raise Malformed(f"not a segment: {seg[:20]!r}")


def _patient_id(segs: list[str], sep: str, encoding: str) -> str | None:
    """PID-3's first identifier (its first repetition's first component), if there is a PID."""
    pid = next((s for s in segs if s.startswith("PID" + sep)), None)
    if pid is None:
        return None
    pid_fields = pid.split(sep)
    if len(pid_fields) <= 3:
        return None
    component, repetition = encoding[0], encoding[1]
    return pid_fields[3].split(repetition)[0].split(component)[0].strip() or None


def ack(header: Header | None, code: str, text: str = "", control_id: str = "") -> bytes:
    """An ACK: MSA-1 ``code`` (AA accepted, AE error), MSA-2 the acknowledged control id. The
    sender and receiver of the original swap places; without a readable header, generic ones."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
    if header is None:
        sep, comp = "|", "^"
        apps = ["HL7ENGINE", "CAPLAB", "", ""]
        trigger, version = "", "2.5"
    else:
        sep, comp = header.field_separator, header.component_separator
        apps = [
            header.receiving_application,
            header.receiving_facility,
            header.sending_application,
            header.sending_facility,
        ]
        parts = header.message_type.split(comp)
        trigger, version = parts[1] if len(parts) > 1 else "", header.version
        control_id = header.control_id
    clean = text.replace(sep, " ").replace("\r", " ").replace("\n", " ")[:200]
    msh = sep.join(
        [
            "MSH",
            f"{comp}~\\&",
            *apps,
            stamp,
            "",
            f"ACK{comp}{trigger}{comp}ACK",
            f"A{control_id}",
            "P",
            version,
        ]
    )
    msa = sep.join(["MSA", code, control_id, *([clean] if clean else [])])
    return f"{msh}\r{msa}\r".encode()


def ack_code(reply: bytes) -> str:
    """MSA-1 of an acknowledgement (AA, AE, AR), or "" if there is none."""
    for seg in segments(decode(reply)):
        if seg.startswith("MSA"):
            fields = seg.split(seg[3]) if len(seg) > 3 else []
            return fields[1] if len(fields) > 1 else ""
    return ""
