"""Subscriptions: which subscriber takes a message, by message type (the XML root element).

They live in the master MessageBox (store 0), installed when it is created; receive reads them to
refuse documents nobody subscribes to (BizTalk's routing failure) and hosts read them to route.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SubscriberKind = Literal["send-port", "orchestration"]
SEND_PORT = "SinkSendPort"
ORCHESTRATION = "OrderOrchestration"


@dataclass(frozen=True, slots=True)
class Subscription:
    message_type: str
    kind: SubscriberKind
    subscriber: str


DEFAULT_SUBSCRIPTIONS = (
    Subscription("order", "send-port", SEND_PORT),
    Subscription("orchestrated-order", "orchestration", ORCHESTRATION),
    Subscription("approved-order", "send-port", SEND_PORT),
)
"""Messaging: ``order`` → send port. Orchestration: ``orchestrated-order`` → orchestration, whose
``approved-order`` → send port."""


def from_rows(rows: list[list[str]]) -> dict[str, Subscription]:
    """The routing table from a store reply's ``[[type, kind, subscriber], …]``."""
    table: dict[str, Subscription] = {}
    for message_type, kind, subscriber in rows:
        if kind not in ("send-port", "orchestration"):
            raise ValueError(f"subscription for {message_type!r} has an unknown kind {kind!r}")
        table[message_type] = Subscription(
            message_type, "send-port" if kind == "send-port" else "orchestration", subscriber
        )
    return table
