"""The population: N ``inetOrgPerson`` users of K single-valued attributes (the paper: 25 attributes,
none multivalued), the same people whether written as LDIF for slapadd or as the text source's CSV.

Values are a pure function of the person's number, so two seeds of the same N are identical and a
test can predict any attribute.
"""

from __future__ import annotations

import base64
import csv
from pathlib import Path

from caplab.systems.idsync.directory import PEOPLE
from caplab.systems.idsync.errors import IdsyncError

REQUIRED = ("uid", "cn", "sn", "employeeNumber")
"""Always present: the DN's attribute, what the schema requires, and the join key."""
OPTIONAL = (
    "givenName",
    "mail",
    "displayName",
    "initials",
    "title",
    "employeeType",
    "departmentNumber",
    "o",
    "ou",
    "l",
    "st",
    "street",
    "postalCode",
    "postOfficeBox",
    "physicalDeliveryOfficeName",
    "telephoneNumber",
    "mobile",
    "facsimileTelephoneNumber",
    "pager",
    "homePhone",
    "roomNumber",
    "carLicense",
    "preferredLanguage",
    "businessCategory",
    "description",
    "destinationIndicator",
    "postalAddress",
    "homePostalAddress",
)
ATTRIBUTES = REQUIRED + OPTIONAL
MIN_ATTRIBUTES = len(REQUIRED)
MAX_ATTRIBUTES = len(ATTRIBUTES)
OBJECT_CLASSES = ("top", "person", "organizationalPerson", "inetOrgPerson")
CITIES = ("Lyon", "Porto", "Graz", "Turku", "Leeds", "Brno", "Gent", "Bergen")
TITLES = ("Engineer", "Analyst", "Manager", "Clerk", "Consultant", "Technician")


def check_attributes(count: int) -> None:
    if not MIN_ATTRIBUTES <= count <= MAX_ATTRIBUTES:
        raise IdsyncError(f"--attributes must be {MIN_ATTRIBUTES}…{MAX_ATTRIBUTES}, got {count}")


def uid(n: int) -> str:
    return f"u{n:07d}"


def person(n: int, count: int) -> dict[str, str]:
    """Person number ``n`` (from 1) with the first ``count`` attributes of ATTRIBUTES."""
    given = f"Given{n % 997}"
    family = f"Family{n}"
    city = CITIES[n % len(CITIES)]
    values = {
        "uid": uid(n),
        "cn": f"{given} {family}",
        "sn": family,
        "employeeNumber": f"E{n:08d}",
        "givenName": given,
        "mail": f"{uid(n)}@Example.TEST",
        "displayName": f"{family}, {given}",
        "initials": given[0] + family[0],
        "title": TITLES[n % len(TITLES)],
        "employeeType": ("staff", "contractor", "intern")[n % 3],
        "departmentNumber": f"D{n % 200:03d}",
        "o": "Idsync Test Corporation",
        "ou": f"Unit {n % 50}",
        "l": city,
        "st": f"Region {n % 12}",
        "street": f"{n % 400} Long Street",
        "postalCode": f"{10000 + n % 89999}",
        "postOfficeBox": f"PO {n % 9000}",
        "physicalDeliveryOfficeName": f"{city} office",
        "telephoneNumber": f"+44 20 7{n % 10000000:07d}",
        "mobile": f"+44 77 0{n % 10000000:07d}",
        "facsimileTelephoneNumber": f"+44 20 8{n % 10000000:07d}",
        "pager": f"+44 76 {n % 1000000:06d}",
        "homePhone": f"+44 11 {n % 1000000:06d}",
        "roomNumber": f"{n % 9}{n % 100:02d}",
        "carLicense": f"CL-{n:08X}",
        "preferredLanguage": ("en", "fr", "de", "pt")[n % 4],
        "businessCategory": ("sales", "research", "operations")[n % 3],
        "description": f"Reference person {n} for the identity-sync study",
        "destinationIndicator": f"DI{n % 97:02d}",
        "postalAddress": f"{n % 400} Long Street${city}",
        "homePostalAddress": f"{n % 300} Short Road${city}",
    }
    return {name: values[name] for name in ATTRIBUTES[:count]}


def dn(n: int) -> str:
    return f"uid={uid(n)},{PEOPLE}"


def write_ldif(path: Path, objects: int, count: int, header: str = "") -> None:
    """The people as LDIF for slapadd (which fills in the operational attributes itself), after
    ``header`` (the entries above them)."""
    with path.open("w") as out:
        out.write(header)
        for n in range(1, objects + 1):
            lines = [f"dn: {dn(n)}", *(f"objectClass: {c}" for c in OBJECT_CLASSES)]
            lines += [ldif_line(name, value) for name, value in person(n, count).items()]
            out.write("\n".join(lines) + "\n\n")


def ldif_line(name: str, value: str) -> str:
    if value.isascii() and not value.startswith((" ", ":", "<")):
        return f"{name}: {value}"
    return f"{name}:: {base64.b64encode(value.encode()).decode()}"


def write_csv(path: Path, objects: int, count: int) -> None:
    """The people as the text source reads them: a header of attribute names, one row each."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(ATTRIBUTES[:count])
        writer.writerows(person(n, count).values() for n in range(1, objects + 1))
