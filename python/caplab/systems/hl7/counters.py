"""Per-channel counters shared through one memory-mapped file, so ``/metrics`` asks no process.

One slot per channel in the shared counters file (caplab.systems.counterfile), of ``Field``
counters. Each field has one writer: the receiver the first four, the channel's worker the rest
(aligned 8-byte stores, never torn). The supervisor creates the file with the database's own
counts (``seed``), so the totals are those of the data directory since it was made, and re-seeds a
channel's fields from the database before it restarts a process that died (which may have
committed a batch without counting it).
"""

from __future__ import annotations

from enum import IntEnum

from caplab.systems.counterfile import CounterFile
from caplab.systems.hl7.queue import ChannelCounts


class Field(IntEnum):
    RECEIVED = 0  # MLLP frames read
    QUEUED = 1  # new messages committed (acknowledged AA)
    DUPLICATES = 2  # control ids already queued on the channel (acknowledged AA, not queued again)
    REJECTED = 3  # malformed, kept in the rejected table (acknowledged AE)
    TRANSFORMED = 4  # documents stored by the transform
    WRITTEN = 5  # messages written out and marked written
    FAILED = 6  # queued messages the transform could not map


RECEIVER_FIELDS = (Field.RECEIVED, Field.QUEUED, Field.DUPLICATES, Field.REJECTED)
WORKER_FIELDS = (Field.TRANSFORMED, Field.WRITTEN, Field.FAILED)


class Counters(CounterFile):
    """The counters file (caplab.systems.counterfile) with one slot per channel."""

    @property
    def channels(self) -> int:
        return self.slots

    def seed(self, channel: int, counts: ChannelCounts, fields: tuple[Field, ...]) -> None:
        """Sets ``fields`` of a channel to what the database holds (RECEIVED never goes below
        what was acknowledged or rejected)."""
        slot = self.slot(channel)
        values = {
            Field.QUEUED: counts.queued_total,
            Field.REJECTED: counts.rejected,
            Field.TRANSFORMED: counts.transformed_total,
            Field.WRITTEN: counts.states["written"],
            Field.FAILED: counts.states["failed"],
        }
        for f in fields:
            if f in values:
                slot[f] = values[f]
        if Field.RECEIVED in fields:
            slot[Field.RECEIVED] = max(
                slot[Field.RECEIVED], counts.queued_total + counts.rejected + slot[Field.DUPLICATES]
            )
