"""Pipeline components the host runs around a map: the XML validator on the way in and the
signing assembler on the way out, as a BizTalk receive/send pipeline would.

Validation checks every element of an order against a small schema (known elements, required
attributes with typed values, allowed children) and names the first problem by its path. Signing
is an enveloped signature in the manner of XML-DSig: the digest of the document's canonical form
(C14N 2.0) goes into a ``<signed-info>``, whose own canonical form is what the HMAC-SHA256 covers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

SIGNING_KEY = b"msgbus send port signing key"


class InvalidDocument(ValueError):
    """A document that does not follow its schema; the message says where."""


def _text(value: str) -> object:
    if not value.strip():
        raise ValueError("is empty")
    return value


def _code(length: int) -> Callable[[str], object]:
    def parse(value: str) -> object:
        if len(value) != length or not value.isalpha() or not value.isupper():
            raise ValueError(f"is not a {length}-letter code")
        return value

    return parse


def _quantity(value: str) -> object:
    qty = int(value)
    if not 0 < qty <= 10_000:
        raise ValueError("is not a quantity in 1…10000")
    return qty


def _amount(value: str) -> object:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError("is not a decimal amount") from None


@dataclass(frozen=True)
class Rule:
    """What one element may carry: required and optional attributes (each with a parser that
    raises ValueError on a bad value) and the names of the children it may have."""

    required: dict[str, Callable[[str], object]]
    optional: dict[str, Callable[[str], object]] = field(default_factory=dict)
    children: frozenset[str] = frozenset()


_ORDER = Rule(
    {"id": _text, "customer": _text, "currency": _code(3)},
    {"status": _text, "total": _amount},
    frozenset({"ship-to", "item"}),
)
ORDER_SCHEMA: dict[str, Rule] = {
    "order": _ORDER,
    "orchestrated-order": _ORDER,
    "approved-order": Rule(
        {**_ORDER.required, "status": _text, "total": _amount}, {}, _ORDER.children | {"signature"}
    ),
    "ship-to": Rule({"country": _code(2), "postcode": _text}),
    "item": Rule({"sku": _text, "qty": _quantity}),
    # The orchestration's enveloped signature on an approved order (see sign()).
    "signature": Rule({"method": _text}, children=frozenset({"signed-info", "value"})),
    "signed-info": Rule({"c14n": _text, "digest-method": _text}, children=frozenset({"reference"})),
    "reference": Rule({"uri": str}),
    "value": Rule({}),
}


def validate(root: ET.Element, schema: dict[str, Rule]) -> None:
    """Raises InvalidDocument at the first element or attribute the schema does not allow."""
    stack: list[tuple[ET.Element, str]] = [(root, f"/{root.tag}")]
    while stack:
        element, path = stack.pop()
        rule = schema.get(element.tag)
        if rule is None:
            raise InvalidDocument(f"{path}: element not in the schema")
        attributes = element.attrib
        for name, parse in rule.required.items():
            value = attributes.get(name)
            if value is None:
                raise InvalidDocument(f"{path}: missing attribute {name!r}")
            _check(parse, value, path, name)
        for name, value in attributes.items():
            if name in rule.required:
                continue
            optional = rule.optional.get(name)
            if optional is None:
                raise InvalidDocument(f"{path}: unexpected attribute {name!r}")
            _check(optional, value, path, name)
        for i, child in enumerate(element):
            if child.tag not in rule.children:
                raise InvalidDocument(f"{path}/{child.tag}: not allowed in <{element.tag}>")
            stack.append((child, f"{path}/{child.tag}[{i + 1}]"))


def _check(parse: Callable[[str], object], value: str, path: str, name: str) -> None:
    try:
        parse(value)
    except ValueError as e:
        raise InvalidDocument(f"{path}/@{name}: {value!r} {e}") from None


def sign(element: ET.Element) -> None:
    """Appends an enveloped ``<signature>`` over the element as it is now."""
    canonical = ET.canonicalize(ET.tostring(element, encoding="unicode"))
    digest = base64.b64encode(hashlib.sha256(canonical.encode()).digest()).decode()
    signed_info = ET.Element("signed-info", {"c14n": "c14n-2.0", "digest-method": "sha256"})
    ET.SubElement(signed_info, "reference", {"uri": ""}).text = digest
    covered = ET.canonicalize(ET.tostring(signed_info, encoding="unicode")).encode()
    signature = ET.SubElement(element, "signature", {"method": "hmac-sha256"})
    signature.append(signed_info)
    ET.SubElement(signature, "value").text = hmac.new(SIGNING_KEY, covered, hashlib.sha256).hexdigest()


def verify(element: ET.Element) -> bool:
    """Checks a signature made by sign() (what the back end would do; used by the tests)."""
    signature = element.find("signature")
    if signature is None:
        return False
    signed_info, value = signature.find("signed-info"), signature.findtext("value")
    reference = signed_info.findtext("reference") if signed_info is not None else None
    if signed_info is None or reference is None or value is None:
        return False
    element.remove(signature)
    try:
        canonical = ET.canonicalize(ET.tostring(element, encoding="unicode"))
    finally:
        element.append(signature)
    digest = base64.b64encode(hashlib.sha256(canonical.encode()).digest()).decode()
    covered = ET.canonicalize(ET.tostring(signed_info, encoding="unicode")).encode()
    expected = hmac.new(SIGNING_KEY, covered, hashlib.sha256).hexdigest()
    return hmac.compare_digest(digest, reference) and hmac.compare_digest(expected, value)
