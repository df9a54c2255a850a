"""The MessageBox: one store's durable table of published, not yet completed messages, and (on the
master) the subscriptions.

A message is a row from the publish that stored it to the complete that deletes it; the store
server commits both before it answers, so an acknowledged document is on disk until the sink has
acknowledged it. Which rows are claimable or leased is the store server's business (leases.py).
The store server calls these methods inside one transaction per group commit (begin … commit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from caplab.systems.msgbus.subscriptions import DEFAULT_SUBSCRIPTIONS

STORE_URL_ENV = "MSGBUS_STORE_URL"
"""How a PostgreSQL URL reaches the store servers: in the environment, never on a command line,
where any user could read its password in ``ps``."""

Stored = tuple[int, int, str, str]
"""(message id, interchange id, message type, body)"""


class MessageBox(Protocol):
    description: str

    def begin(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def insert(self, messages: Sequence[Stored]) -> None: ...
    def read(self, message_ids: Sequence[int]) -> list[Stored]: ...
    def delete(self, message_ids: Sequence[int]) -> None: ...
    def stored_ids(self) -> list[int]:
        """Every stored message id, oldest first (what is claimable after a restart)."""
        ...

    def count(self) -> int: ...
    def subscriptions(self) -> list[tuple[str, str, str]]: ...
    def close(self) -> None: ...


def subscription_rows() -> list[tuple[str, str, str]]:
    return [(s.message_type, s.kind, s.subscriber) for s in DEFAULT_SUBSCRIPTIONS]
