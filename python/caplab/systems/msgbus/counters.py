"""What each slot of msgbus's counters file means (the file itself: caplab.systems.counterfile).

The supervisor creates the file with one slot per tier process; each process adds to its own slot
and the supervisor reads all of them when ``/metrics`` is scraped: a scrape costs a few memory reads
and no request to any tier. Slots of processes that died keep their last values, so totals stay
cumulative.
"""

from __future__ import annotations

from enum import IntEnum


class ReceiveCounter(IntEnum):
    RECEIVED = 0  # acknowledged: durably published
    REJECTED = 1  # not XML, not UTF-8, or no subscriber
    PUBLISH_FAILED = 2  # the store failed the publish: answered with an error, not acknowledged
    BATCHES = 3  # publish requests sent to stores


class SinkCounter(IntEnum):
    PROCESSED = 0  # first deliveries
    DELIVERIES = 1  # every delivery, redeliveries included
    DUPLICATES = 2  # redeliveries acknowledged but not counted


class MessageBoxCounter(IntEnum):
    PUBLISHED = 0  # messages inserted (received and republished by orchestrations)
    COMPLETED = 1  # messages deleted by a complete
    CLAIMED = 2
    EXPIRED = 3  # leases that ran out: the message became claimable again
    LOST_LEASES = 4  # completes refused because the lease had passed to another claim
    COMMITS = 5  # group commits


class ProcessingHostCounter(IntEnum):
    SENT = 0  # messages delivered to the sink by this host
    ORCHESTRATIONS = 1  # orchestration steps completed (republished)
    FAULTS = 2  # maps that failed: a fault document was delivered instead
    LOST_LEASES = 3


class Layout:
    """Slot numbers: receive, sink, then the stores, then the hosts."""

    RECEIVE = 0
    SINK = 1

    def __init__(self, stores: int, hosts: int) -> None:
        self.stores = stores
        self.hosts = hosts

    @property
    def slots(self) -> int:
        return 2 + self.stores + self.hosts

    def store(self, index: int) -> int:
        return 2 + index

    def host(self, index: int) -> int:
        return 2 + self.stores + index
