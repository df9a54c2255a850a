"""Counters shared through one memory-mapped file, as Windows performance counters are.

A supervisor creates the file with one slot per process (or channel); each writer adds to its own
fields and whoever serves ``/metrics`` reads every slot: a scrape costs a few memory reads and asks
no process anything. A slot holds SLOT_FIELDS unsigned 64-bit counters, each with one writer
(aligned 8-byte stores, so a reader never sees a torn value). What a slot's fields mean is the
system's own business.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

SLOT_FIELDS = 8
SLOT_BYTES = SLOT_FIELDS * 8


def create(path: Path, slots: int) -> None:
    """A zeroed counters file of ``slots`` slots."""
    with open(path, "wb") as f:
        f.truncate(slots * SLOT_BYTES)


class CounterFile:
    """The counters file mapped into this process; ``slot(i)`` is one slot's counters."""

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
