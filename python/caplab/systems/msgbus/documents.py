"""The documents msgbus carries: the two bodies clients send, and what makes a body a message.

A message is a well-formed XML document in UTF-8; its *message type* is the name of its root
element (``ns#name`` when the root is in a namespace, as BizTalk spells it). Subscriptions route
on that type, so the root element alone decides which flow a document takes:

- ``<order>`` → the messaging flow (straight to the send port);
- ``<orchestrated-order>`` → the orchestration flow (an orchestration prices and approves it,
  publishes an ``<approved-order>``, which the send port then takes).

Both bodies contain ``{seq}``, which caplab's engine (``--template``) replaces with a per-request
sequence number; it becomes the order's ``id`` attribute and is informational only: the id a
client must keep is the *interchange id* msgbus returns in the acknowledgement.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

_LINES = (
    "A1:24 B7:2 C3:5 D4:3 E9:1 F2:4 G5:10 H8:2 J6:6 K2:1 L3:12 M1:2 N4:8 P7:1 Q2:3 R5:20 S8:2 T1:4 U6:1 V9:6"
)
_ITEMS = "".join(
    f'<item sku="{sku}" qty="{qty}"/>' for sku, _, qty in (line.partition(":") for line in _LINES.split())
)
"""Twenty order lines: a purchase order of about 700 bytes."""

MESSAGING_BODY = (
    f'<order id="{{seq}}" customer="C-1042" currency="EUR">'
    f'<ship-to country="DE" postcode="10115"/>{_ITEMS}</order>'
)
"""Messaging flow: received, published, routed by the send port's subscription to the sink."""

ORCHESTRATION_BODY = (
    f'<orchestrated-order id="{{seq}}" customer="C-1042" currency="EUR">'
    f'<ship-to country="DE" postcode="10115"/>{_ITEMS}</orchestrated-order>'
)
"""Orchestration flow: an orchestration consumes it and publishes an ``<approved-order>``."""


class NotAMessage(ValueError):
    """The body is not a document msgbus can publish (not UTF-8, or not well-formed XML)."""


@dataclass(frozen=True, slots=True)
class Document:
    message_type: str
    text: str


def message_type_of(tag: str) -> str:
    """``{uri}name`` (ElementTree's spelling) → ``uri#name``; a plain name stays as it is."""
    if tag.startswith("{"):
        uri, _, name = tag[1:].partition("}")
        return f"{uri}#{name}"
    return tag


def read_document(body: bytes) -> Document:
    """Checks that ``body`` is a well-formed UTF-8 XML document and names its message type."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotAMessage(f"body is not UTF-8: {e.reason} at byte {e.start}") from None
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        raise NotAMessage(f"not well-formed XML: {e}") from None
    return Document(message_type_of(root.tag), text)
