"""The synchronisation rules, kept apart from the machinery that applies them: how a connector-space
object joins the metaverse, which attributes flow and how, and what is provisioned to the export.
Deliberately simple (the paper's tests used simple rules too): the cost measured is the engine's.
"""

from __future__ import annotations

from caplab.systems.idsync.directory import EXPORT
from caplab.systems.idsync.sources import Attributes

JOIN_ATTRIBUTE = "employeeNumber"
"""Join rule: a connector-space object joins the metaverse person with the same employee number;
with none, a new person is projected."""
COPIED = (
    "uid", "cn", "sn", "givenName", "employeeNumber", "title", "employeeType", "o", "ou", "l", "st",
    "street", "postalCode", "postOfficeBox", "physicalDeliveryOfficeName", "telephoneNumber", "mobile",
    "facsimileTelephoneNumber", "pager", "homePhone", "roomNumber", "carLicense", "preferredLanguage",
    "businessCategory", "description", "destinationIndicator", "postalAddress", "homePostalAddress",
    "initials",
)  # fmt: skip
"""Import flow: these attributes flow unchanged into the metaverse."""
EXPORTED = ("uid", "cn", "sn", "givenName", "employeeNumber", "mail", "displayName", "departmentNumber",
            "title", "telephoneNumber", "l")  # fmt: skip
"""Export flow: what the provisioned person carries in the target."""


def join_key(attributes: Attributes) -> str | None:
    value = attributes.get(JOIN_ATTRIBUTE)
    if isinstance(value, list):
        value = value[0] if value else None
    return value or None


def single(attributes: Attributes, name: str) -> str | None:
    value = attributes.get(name)
    if isinstance(value, list):
        return value[0] if value else None
    return value


def import_flow(attributes: Attributes) -> dict[str, str]:
    """Connector-space attributes → metaverse attributes: copies, plus three computed flows (the
    display name from the given and family names, the mail address in lower case, the department
    from the department number)."""
    flowed = {name: value for name in COPIED if (value := single(attributes, name)) is not None}
    given, family = single(attributes, "givenName"), single(attributes, "sn")
    if given and family:
        flowed["displayName"] = f"{given} {family}"
    if mail := single(attributes, "mail"):
        flowed["mail"] = mail.lower()
    if department := single(attributes, "departmentNumber"):
        flowed["department"] = department
    return flowed


def provision(person: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Provisioning rule: every metaverse person gets an account in the export subtree, named by
    its employee number (unique, so two sources' people cannot collide)."""
    attributes = {name: person[name] for name in EXPORTED if name in person}
    if "department" in person:
        attributes["departmentNumber"] = person["department"]
    attributes.setdefault("cn", person["employeeNumber"])
    attributes.setdefault("sn", person["employeeNumber"])
    return f"employeeNumber={person['employeeNumber']},{EXPORT}", attributes
