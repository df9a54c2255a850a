"""Leases: which stored messages a host may claim, and which are held by a host for now.

A claim leases a message for ``lease_s`` seconds under a fresh token; completing it needs that
token. If the lease runs out first (the host died, or stalled), the message becomes claimable again
and the old token is void, so a late complete from the first host is refused ("lost lease") rather
than deleting a message another host is now delivering.

Leases live in the store server's memory, not in the database: the store server is the only owner
of its MessageBox, and a lease needs no durability (if the store server restarts, every lease is
void anyway and every stored message is claimable again). So claiming costs no disk write; only
publishing and completing, which must survive a crash, are committed to disk.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(slots=True)
class Lease:
    token: int
    expires: float
    interchange_id: int


class Leases:
    def __init__(self, lease_s: float) -> None:
        self.lease_s = lease_s
        self.ready: deque[int] = deque()
        self.held: dict[int, Lease] = {}
        # Every lease lasts lease_s, so expiry order is claim order: a FIFO, not a heap. Entries of
        # leases completed since are skipped when they come up.
        self._expiries: deque[tuple[float, int, int]] = deque()
        self._next_token = 1

    def __len__(self) -> int:
        return len(self.ready) + len(self.held)

    def add(self, message_ids: list[int]) -> None:
        """Newly stored messages, claimable now (oldest first)."""
        self.ready.extend(message_ids)

    def take(self, limit: int) -> list[int]:
        """Up to ``limit`` claimable message ids, oldest first; grant() each one read."""
        n = min(limit, len(self.ready))
        return [self.ready.popleft() for _ in range(n)]

    def grant(self, message_id: int, interchange_id: int, now: float) -> int:
        """Leases a message taken by take(); returns the claim's token."""
        token = self._next_token
        self._next_token += 1
        expires = now + self.lease_s
        self.held[message_id] = Lease(token, expires, interchange_id)
        self._expiries.append((expires, message_id, token))
        return token

    def complete(self, message_id: int, token: int) -> Lease | None:
        """Ends the lease if ``token`` still holds it; None if it expired or was never granted."""
        lease = self.held.get(message_id)
        if lease is None or lease.token != token:
            return None
        del self.held[message_id]
        return lease

    def expire(self, now: float) -> int:
        """Returns leases that ran out to the front of the claimable queue; how many."""
        expired = 0
        while self._expiries and self._expiries[0][0] <= now:
            _, message_id, token = self._expiries.popleft()
            lease = self.held.get(message_id)
            if lease is not None and lease.token == token:
                del self.held[message_id]
                self.ready.appendleft(message_id)
                expired += 1
        return expired

    def next_expiry(self) -> float | None:
        """When the next lease still held runs out (entries of completed leases are dropped)."""
        while self._expiries:
            expires, message_id, token = self._expiries[0]
            lease = self.held.get(message_id)
            if lease is not None and lease.token == token:
                return expires
            self._expiries.popleft()
        return None
