"""Realistic load: ADT^A01 (admit) and ORU^R01 (lab results) messages with varying patients and sizes.

Two uses. ``template(kind, …)`` is a request body for ``caplab load tcp://… --framing mllp
--template``: the engine's per-request ``{seq}`` goes into the control id (MSH-10) and the patient
id (PID-3), so every request is a new message about a patient of its own. ``messages(n, seed)`` is
a list of complete messages for clients that send themselves (the tests): patients, names, visits
and the number of results (so the size) vary from message to message, reproducibly per seed.

Control ids must be new to the engine (it acknowledges a repeated one without queueing it again),
and the load engine's ``{seq}`` starts at 0 in every run: give each run against the same data
directory its own ``prefix``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

KINDS = ("adt", "oru")
FAMILY = ("Smith", "Jones", "Garcia", "Nguyen", "Okafor", "Müller", "Rossi", "Kowalski", "Tanaka", "Silva")
GIVEN = ("Ann", "Ben", "Chloe", "David", "Eva", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Liam")
WARDS = ("ICU", "MED1", "MED2", "SURG", "PED", "ONC", "CARD")
TESTS = (
    ("GLU", "Glucose", "mmol/L", "3.9-6.1", 3.0, 9.0),
    ("NA", "Sodium", "mmol/L", "135-145", 128.0, 150.0),
    ("K", "Potassium", "mmol/L", "3.5-5.1", 3.0, 6.0),
    ("CREA", "Creatinine", "umol/L", "62-106", 40.0, 180.0),
    ("HGB", "Haemoglobin", "g/L", "130-170", 90.0, 180.0),
    ("WBC", "Leukocytes", "10*9/L", "4.0-10.0", 2.0, 18.0),
    ("PLT", "Platelets", "10*9/L", "150-400", 80.0, 500.0),
    ("CRP", "C-reactive protein", "mg/L", "0-5", 0.0, 120.0),
)


@dataclass(frozen=True)
class Patient:
    id: str
    family: str
    given: str
    birth_date: str
    sex: str
    ward: str
    bed: int


def patient(rng: random.Random, patient_id: str) -> Patient:
    return Patient(
        id=patient_id,
        family=rng.choice(FAMILY),
        given=rng.choice(GIVEN),
        birth_date=f"{rng.randint(1930, 2020)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}",
        sex=rng.choice("MF"),
        ward=rng.choice(WARDS),
        bed=rng.randint(1, 40),
    )


def _msh(kind: str, control_id: str, stamp: str) -> str:
    message_type = "ADT^A01^ADT_A01" if kind == "adt" else "ORU^R01^ORU_R01"
    sender = "ADMIT^GENHOSP" if kind == "adt" else "LAB^GENHOSP"
    app, facility = sender.split("^")
    return f"MSH|^~\\&|{app}|{facility}|HL7ENGINE|GENHOSP|{stamp}||{message_type}|{control_id}|P|2.5"


def _pid(p: Patient) -> str:
    return (
        f"PID|1||{p.id}^^^GENHOSP^MR||{p.family}^{p.given}^^^^^L||{p.birth_date}|{p.sex}|||"
        f"{10 + p.bed} Hospital Road^^Springfield^ST^{10000 + p.bed * 7}^^H||555-{p.bed:04d}"
    )


def _pv1(p: Patient, stamp: str) -> str:
    # PV1-2 class, PV1-3 location, PV1-7 attending, PV1-10 service, PV1-19 visit number, PV1-44 admitted
    location, attending = f"{p.ward}^{p.bed:03d}^1^GENHOSP", "1234^House^Gregory^^^Dr"
    return f"PV1|1|I|{location}||||{attending}|||MED|||||||||V{p.id}{'|' * 25}{stamp}"


def message(kind: str, control_id: str, p: Patient, results: int, rng: random.Random, stamp: str) -> str:
    """One message, segments separated by CR (no trailing CR after the last segment)."""
    segs = [
        _msh(kind, control_id, stamp),
        f"EVN|A01|{stamp}" if kind == "adt" else None,
        _pid(p),
        _pv1(p, stamp),
    ]
    if kind == "adt":
        segs.append(
            f"NK1|1|{p.family}^{rng.choice(GIVEN)}|SPO^Spouse|{10 + p.bed} Hospital Road^^Springfield^ST"
        )
        segs.append("AL1|1|DA|^Penicillin|MO|Rash")
    else:
        segs.append(f"ORC|RE|O{control_id}|F{control_id}||CM")
        segs.append(
            f"OBR|1|O{control_id}|F{control_id}|CHEM^Chemistry panel|||{stamp}|||||||||1234^House^Gregory"
        )
        for i in range(results):
            code, text, units, ref, low, high = TESTS[i % len(TESTS)]
            value = round(rng.uniform(low, high), 1)
            lo, _, hi = ref.partition("-")
            flag = "L" if value < float(lo) else "H" if value > float(hi) else "N"
            segs.append(f"OBX|{i + 1}|NM|{code}^{text}^LN||{value}|{units}|{ref}|{flag}|||F|||{stamp}")
    return "\r".join(s for s in segs if s is not None)


def template(kind: str, results: int = 8, prefix: str = "") -> str:
    """A request body with ``{seq}`` in the control id and the patient id (see the module doc)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    rng = random.Random(kind)
    p = patient(rng, f"{prefix}P{{seq}}")
    return message(kind, f"{prefix}{{seq}}", p, results, rng, "20260101120000")


def messages(n: int, seed: int = 0, prefix: str = "M") -> list[tuple[str, bytes]]:
    """``n`` messages (control id, body): ADT^A01 and ORU^R01 mixed, patients drawn from a pool of
    n/3 (so patients recur), ORU with 1…20 results."""
    rng = random.Random(seed)
    pool = max(1, n // 3)
    out = []
    for i in range(n):
        kind = rng.choice(KINDS)
        p = patient(rng, f"P{rng.randrange(pool):06d}")
        control_id = f"{prefix}{seed}-{i}"
        day, minute = rng.randint(0, 364), rng.randint(0, 24 * 60 - 1)
        stamp = time.strftime("%Y%m%d%H%M00", time.gmtime(1767225600 + day * 86400 + minute * 60))
        body = message(kind, control_id, p, rng.randint(1, 20), rng, stamp)
        out.append((control_id, body.encode()))
    return out
