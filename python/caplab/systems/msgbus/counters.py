"""Performance counters shared through one memory-mapped file, as Windows performance counters are.

The supervisor creates the file with one slot per tier process; each process adds to its own slot
and the supervisor reads all of them when ``/metrics`` is scraped: a scrape costs a few memory reads
and no request to any tier. A slot holds SLOT_FIELDS unsigned 64-bit counters with one writer each
(aligned 8-byte stores, so a reader never sees a torn value). Slots of processes that died keep
their last values, so totals stay cumulative.
"""

from __future__ import annotations

import mmap
import os
from enum import IntEnum
from pathlib import Path

SLOT_FIELDS = 8
SLOT_BYTES = SLOT_FIELDS * 8


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


def create(path: Path, slots: int) -> None:
    """A zeroed counters file for ``slots`` processes."""
    with open(path, "wb") as f:
        f.truncate(slots * SLOT_BYTES)


class CounterFile:
    """The counters file mapped into this process; ``slot(i)`` is one process's counters."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        self._view = memoryview(self._map).cast("Q")

    @property
    def slots(self) -> int:
        return len(self._view) // SLOT_FIELDS

    def slot(self, index: int) -> memoryview:
        """A writable view of one slot's counters (``slot[field] += n``)."""
        if not 0 <= index < self.slots:
            raise IndexError(f"counter slot {index} is outside the file's {self.slots} slots")
        return self._view[index * SLOT_FIELDS : (index + 1) * SLOT_FIELDS]

    def read(self, index: int) -> tuple[int, ...]:
        return tuple(self.slot(index).tolist())


def open_slot(path: str | None, index: int) -> memoryview:
    """This process's counters: the slot in the shared file, or private ones when run stand-alone."""
    if path is None:
        return memoryview(bytearray(SLOT_BYTES)).cast("Q")
    return CounterFile(Path(path)).slot(index)
