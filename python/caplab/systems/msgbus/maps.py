"""What a host does to each message: the send port's outbound map and the orchestration's step.

This is the processing tier's real CPU cost per document, the part that adding hosts spreads out:
parse the XML and validate it against the order schema (pipeline.py), price the order against a
catalogue (decimal money, volume discounts, tax by destination country), build the outbound
``<invoice>``, sign it (C14N, SHA-256 digest, HMAC over the signed info) and serialise it. The
orchestration validates and prices the order once more for its credit check before publishing an
``<approved-order>``, so a document in the orchestration flow costs about one and a half times the
host work of one in the messaging flow, besides its extra round trips to the MessageBox.

A document that fails validation or a map raises one of MAP_ERRORS; the host then delivers a
``<fault>`` report instead (failed-message routing), so no message is stuck or lost. Unknown SKUs
are priced at zero and flagged, not refused.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from caplab.systems.msgbus.pipeline import ORDER_SCHEMA, InvalidDocument, sign, validate, verify

CENT = Decimal("0.01")
CATALOGUE: dict[str, tuple[str, Decimal]] = {
    "A1": ("hex bolt M8", Decimal("0.35")),
    "B7": ("bearing 6204", Decimal("24.50")),
    "C3": ("gasket kit", Decimal("7.20")),
    "D4": ("drive belt", Decimal("18.90")),
    "E9": ("motor mount", Decimal("64.00")),
    "F2": ("filter cartridge", Decimal("11.75")),
    "G5": ("hose clamp 40 mm", Decimal("0.80")),
    "H8": ("pressure gauge", Decimal("32.40")),
    "J6": ("seal ring 60 mm", Decimal("2.15")),
    "K2": ("control valve", Decimal("148.00")),
    "L3": ("cable tie pack", Decimal("3.90")),
    "M1": ("pump impeller", Decimal("86.50")),
    "N4": ("o-ring kit", Decimal("5.60")),
    "P7": ("gearbox oil 5 l", Decimal("41.25")),
    "Q2": ("coupling insert", Decimal("9.80")),
    "R5": ("washer M10", Decimal("0.12")),
    "S8": ("limit switch", Decimal("27.30")),
    "T1": ("v-belt pulley", Decimal("22.00")),
    "U6": ("frequency drive", Decimal("389.00")),
    "V9": ("terminal block", Decimal("1.45")),
}
VOLUME_DISCOUNTS = ((Decimal("500"), Decimal("0.05")), (Decimal("100"), Decimal("0.02")))
"""(subtotal at least, discount rate), largest first."""
TAX_RATES = {"DE": Decimal("0.19"), "FR": Decimal("0.20"), "NL": Decimal("0.21"), "GB": Decimal("0.20")}
DEFAULT_TAX = Decimal("0.20")
CREDIT_LIMITS = {"C-1042": Decimal("2500.00")}
DEFAULT_CREDIT = Decimal("1000.00")


@dataclass(frozen=True, slots=True)
class Line:
    sku: str
    qty: int
    description: str
    unit_price: Decimal
    known: bool

    @property
    def amount(self) -> Decimal:
        return (self.unit_price * self.qty).quantize(CENT, ROUND_HALF_EVEN)


@dataclass(frozen=True, slots=True)
class Order:
    order_id: str
    customer: str
    currency: str
    country: str
    postcode: str
    lines: tuple[Line, ...]
    status: str


@dataclass(frozen=True, slots=True)
class Totals:
    subtotal: Decimal
    discount: Decimal
    tax_rate: Decimal
    tax: Decimal
    total: Decimal


def disassemble(text: str) -> ET.Element:
    """Parses a document and validates it against the order schema."""
    root = ET.fromstring(text)
    validate(root, ORDER_SCHEMA)
    return root


def read_order(root: ET.Element) -> Order:
    """The order inside a validated ``<order>``, ``<orchestrated-order>`` or ``<approved-order>``."""
    ship_to = root.find("ship-to")
    lines = []
    for item in root.iter("item"):
        sku = item.get("sku", "")
        description, price = CATALOGUE.get(sku, ("unknown item", Decimal(0)))
        lines.append(Line(sku, int(item.get("qty", "1")), description, price, sku in CATALOGUE))
    return Order(
        order_id=root.get("id", ""),
        customer=root.get("customer", ""),
        currency=root.get("currency", "EUR"),
        country=ship_to.get("country", "") if ship_to is not None else "",
        postcode=ship_to.get("postcode", "") if ship_to is not None else "",
        lines=tuple(lines),
        status=root.get("status", "new"),
    )


def price(order: Order) -> Totals:
    subtotal = sum((line.amount for line in order.lines), Decimal(0))
    rate = next((r for floor, r in VOLUME_DISCOUNTS if subtotal >= floor), Decimal(0))
    discount = (subtotal * rate).quantize(CENT, ROUND_HALF_EVEN)
    tax_rate = TAX_RATES.get(order.country, DEFAULT_TAX)
    tax = ((subtotal - discount) * tax_rate).quantize(CENT, ROUND_HALF_EVEN)
    return Totals(subtotal, discount, tax_rate, tax, subtotal - discount + tax)


def send_port_map(text: str, interchange_id: int) -> str:
    """Outbound map of the send port: an order (plain, or approved by the orchestration, whose
    signature must verify) → a signed ``<invoice>``."""
    root = disassemble(text)
    if root.tag == "approved-order" and not verify(root):
        raise InvalidDocument("/approved-order: the approval's signature does not verify")
    order = read_order(root)
    totals = price(order)
    invoice = ET.Element(
        "invoice",
        {
            "interchange": str(interchange_id),
            "order": order.order_id,
            "customer": order.customer,
            "currency": order.currency,
            "status": order.status,
        },
    )
    ET.SubElement(invoice, "deliver-to", {"country": order.country, "postcode": order.postcode})
    for line in order.lines:
        attrs = {"sku": line.sku, "qty": str(line.qty), "unit-price": str(line.unit_price)}
        attrs["amount"] = str(line.amount)
        if not line.known:
            attrs["unknown"] = "true"
        ET.SubElement(invoice, "line", attrs).text = line.description
    ET.SubElement(invoice, "subtotal").text = str(totals.subtotal)
    ET.SubElement(invoice, "discount").text = str(totals.discount)
    ET.SubElement(invoice, "tax", {"rate": str(totals.tax_rate)}).text = str(totals.tax)
    ET.SubElement(invoice, "total").text = str(totals.total)
    sign(invoice)
    return ET.tostring(invoice, encoding="unicode")


def orchestrate(text: str) -> str:
    """The orchestration's step: credit-check an ``<orchestrated-order>`` and return the signed
    ``<approved-order>`` it publishes (status ``approved``, or ``referred`` over the limit)."""
    order = read_order(disassemble(text))
    totals = price(order)
    limit = CREDIT_LIMITS.get(order.customer, DEFAULT_CREDIT)
    status = "approved" if totals.total <= limit and all(line.known for line in order.lines) else "referred"
    approved = ET.Element(
        "approved-order",
        {
            "id": order.order_id,
            "customer": order.customer,
            "currency": order.currency,
            "status": status,
            "total": str(totals.total),
        },
    )
    ET.SubElement(approved, "ship-to", {"country": order.country, "postcode": order.postcode})
    for line in order.lines:
        ET.SubElement(approved, "item", {"sku": line.sku, "qty": str(line.qty)})
    sign(approved)
    return ET.tostring(approved, encoding="unicode")


def fault(text: str, interchange_id: int, error: Exception) -> str:
    """The document delivered instead when a map fails (BizTalk's failed-message routing): the
    error and the original body, so the message still reaches the back end exactly once."""
    report = ET.Element("fault", {"interchange": str(interchange_id)})
    ET.SubElement(report, "error").text = f"{type(error).__name__}: {error}"
    ET.SubElement(report, "original").text = text
    return ET.tostring(report, encoding="unicode")


MAP_ERRORS = (ET.ParseError, InvalidOperation, ValueError, ArithmeticError)
"""What a map may raise on a document it cannot handle (the host turns these into a fault)."""
