"""The writer step: where a channel's normalised documents go.

``FileWriter`` (the default) writes one file per message, ``<out>/channel-<n>/<control id>.json``:
a batch's files are written to temporary names, made durable together (one ``syncfs`` of the
output's file system instead of an fsync per file, which would cost a journal commit each), renamed
into place and the directory fsynced: a file is either whole or absent, and durable before its row
is marked written.
Writing the same message again (after a worker died between the write and the mark) replaces the
file with the same content: the set of files is the set of messages, each once.

``MllpWriter`` sends each document in an MLLP frame to a downstream system (``--sink host:port``)
and waits for its reply; after a broken connection it reconnects and sends the batch again, so the
sink sees each message at least once and must de-duplicate by control id (as an HL7 receiver does).
"""

from __future__ import annotations

import ctypes
import os
import re
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from caplab.systems.hl7 import mllp
from caplab.systems.hl7.queue import Transformed

UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_LIBC = ctypes.CDLL(None, use_errno=True)
_SYNCFS = hasattr(_LIBC, "syncfs")


def _syncfs(fd: int) -> None:
    """Flushes the file system holding ``fd`` (Linux): every file written on it is durable."""
    if _LIBC.syncfs(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def file_name(control_id: str) -> str:
    """A control id as a file name: safe characters kept, anything else as ``%XX``."""
    name = UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), control_id)
    return ("%2E" + name[1:] if name.startswith(".") else name) + ".json"


class Writer(Protocol):
    description: str

    def write(self, documents: Sequence[Transformed]) -> None: ...

    def close(self) -> None: ...


class FileWriter:
    def __init__(self, out_dir: Path, channel: int) -> None:
        self.directory = out_dir / f"channel-{channel}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.description = f"files in {self.directory}"
        for stale in self.directory.glob(".*.tmp"):  # a worker died mid-write
            stale.unlink(missing_ok=True)

    def write(self, documents: Sequence[Transformed]) -> None:
        if not documents:
            return
        renames = []
        for doc in documents:
            name = file_name(doc.control_id)
            partial = self.directory / f".{name}.tmp"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, doc.document)
                if not _SYNCFS:
                    os.fsync(fd)
            finally:
                os.close(fd)
            renames.append((partial, self.directory / name))
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            if _SYNCFS:
                _syncfs(fd)
            for partial, final in renames:
                os.replace(partial, final)
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        pass


class MllpWriter:
    def __init__(self, address: str, timeout_s: float = 30.0) -> None:
        host, _, port = address.rpartition(":")
        self.address = (host or "127.0.0.1", int(port))
        self.timeout_s = timeout_s
        self.description = f"MLLP to {address}"
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return socket.create_connection(self.address, timeout=self.timeout_s)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def write(self, documents: Sequence[Transformed]) -> None:
        if not documents:
            return
        for attempt in range(5):
            try:
                self._send(documents)
                return
            except OSError:
                if self.sock is not None:
                    self.sock.close()
                self.sock = None
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    def _send(self, documents: Sequence[Transformed]) -> None:
        if self.sock is None:
            self.sock = self._connect()
        self.sock.sendall(b"".join(mllp.frame(d.document) for d in documents))
        frames, replies = mllp.Frames(), 0
        while replies < len(documents):
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionResetError("the sink closed the connection")
            replies += len(frames.feed(data))

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
