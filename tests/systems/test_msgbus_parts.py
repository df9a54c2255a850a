"""The pieces behind the processes, in-process: leases, framing, the host's maps and pipeline."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from caplab.systems.counterfile import SLOT_FIELDS
from caplab.systems.msgbus import MESSAGING_BODY, ORCHESTRATION_BODY, maps
from caplab.systems.msgbus.counters import ProcessingHostCounter
from caplab.systems.msgbus.documents import NotAMessage, read_document
from caplab.systems.msgbus.leases import Leases
from caplab.systems.msgbus.pipeline import InvalidDocument, verify
from caplab.systems.msgbus.processing_host import ProcessingHost
from caplab.systems.msgbus.protocol import FrameBuffer, FrameTooLarge, frame
from caplab.systems.msgbus.subscriptions import DEFAULT_SUBSCRIPTIONS

ORDER = MESSAGING_BODY.replace("{seq}", "7")
ORCHESTRATED = ORCHESTRATION_BODY.replace("{seq}", "7")


def test_a_lease_that_ran_out_is_claimable_again_and_its_old_token_void() -> None:
    leases = Leases(lease_s=1.0)
    leases.add([1, 2, 3])
    assert leases.take(2) == [1, 2]
    first = leases.grant(1, interchange_id=101, now=0.0)
    second = leases.grant(2, interchange_id=102, now=0.0)
    lease = leases.complete(2, second)
    assert lease is not None and lease.interchange_id == 102
    assert leases.expire(now=0.5) == 0
    assert leases.expire(now=1.0) == 1  # message 1's lease; message 2's is already complete
    assert leases.take(10) == [1, 3], "an expired message goes first, before newer ones"
    assert leases.complete(1, first) is None, "the stale token must not complete the reclaimed message"
    again = leases.grant(1, interchange_id=101, now=1.0)
    assert again != first and leases.complete(1, again) is not None
    assert len(leases) == 0


def test_frames_are_cut_across_reads_and_oversized_ones_refused() -> None:
    buf = FrameBuffer(limit=100)
    data = frame(b"one") + frame(b"") + frame(b"three")
    for i in range(len(data)):  # one byte at a time
        buf.feed(data[i : i + 1])
    got = []
    while (f := buf.next_frame()) is not None:
        got.append(f)
    assert got == [b"one", b"", b"three"]
    buf.feed(frame(b"x" * 101))
    with pytest.raises(FrameTooLarge):
        buf.next_frame()


def test_documents_are_typed_by_their_root_element() -> None:
    assert read_document(ORDER.encode()).message_type == "order"
    assert read_document(b'<po xmlns="urn:acme"/>').message_type == "urn:acme#po"
    with pytest.raises(NotAMessage, match="not well-formed"):
        read_document(b"<order>")


def test_the_send_port_map_prices_and_signs_the_invoice() -> None:
    invoice = ET.fromstring(maps.send_port_map(ORDER, 42))
    assert invoice.tag == "invoice" and invoice.get("interchange") == "42"
    lines = invoice.findall("line")
    assert len(lines) == 20
    subtotal = sum(Decimal(line.get("amount", "")) for line in lines)
    assert Decimal(invoice.findtext("subtotal", "")) == subtotal
    total = subtotal - Decimal(invoice.findtext("discount", "")) + Decimal(invoice.findtext("tax", ""))
    assert Decimal(invoice.findtext("total", "")) == total
    assert verify(invoice)
    invoice.find("total").text = "0.00"  # type: ignore[union-attr]
    assert not verify(invoice), "a tampered invoice must not verify"


def test_the_orchestration_approves_and_the_send_port_checks_its_signature() -> None:
    approved = maps.orchestrate(ORCHESTRATED)
    root = ET.fromstring(approved)
    assert root.tag == "approved-order" and root.get("status") == "approved" and verify(root)
    assert ET.fromstring(maps.send_port_map(approved, 1)).get("status") == "approved"
    forged = approved.replace('qty="24"', 'qty="25"')
    with pytest.raises(InvalidDocument, match="signature does not verify"):
        maps.send_port_map(forged, 1)


def test_an_invalid_order_is_named_by_its_path() -> None:
    with pytest.raises(InvalidDocument, match=r"/order/item\[3\]/@qty: '0' is not a quantity"):
        maps.send_port_map(
            '<order id="1" customer="C" currency="EUR"><item sku="A1" qty="2"/>'
            '<ship-to country="DE" postcode="1"/><item sku="A1" qty="0"/></order>',
            1,
        )


def test_a_failing_map_becomes_a_fault_delivery_not_a_stuck_message() -> None:
    counters = memoryview(bytearray(8 * SLOT_FIELDS)).cast("Q")
    host = ProcessingHost({s.message_type: s for s in DEFAULT_SUBSCRIPTIONS}, counters)
    work = host.process([(1, 11, 501, "order", ORDER), (2, 12, 502, "order", "<order/>")])
    assert work.done == [(1, 11), (2, 12)]
    assert [iid for iid, _ in work.deliveries] == [501, 502]
    fault = ET.fromstring(work.deliveries[1][1])
    assert fault.tag == "fault" and "missing attribute 'id'" in fault.findtext("error", "")
    assert counters[ProcessingHostCounter.FAULTS] == 1
    orchestrated = host.process([(3, 13, 503, "orchestrated-order", ORCHESTRATED)])
    assert orchestrated.deliveries == [] and orchestrated.done == []
    assert [(r[0], r[1], r[2]) for r in orchestrated.republish] == [(3, 13, "approved-order")]
