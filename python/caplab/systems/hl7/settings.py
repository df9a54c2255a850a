"""The engine's configuration: channels, where its files go, its database and its ports.

Where things go (each on a volume of its own if the study wants):

- ``--data-dir``: the engine's own files (``engine.json``: its pid, ports and database for
  ``rebuild-index`` and ``stop``; the counters file), and the default for the others.
- ``--db-dir``: SQLite's ``queue.db`` with its log ``queue.db-wal`` and ``queue.db-shm`` (default:
  the data dir). SQLite keeps the WAL beside the database, whatever one does (sqlite_queue.py);
  with PostgreSQL, the database and its log (``pg_wal``, apart with ``initdb --waldir``) are in
  PostgreSQL's own data directory.
- ``--log-dir``: the engine's own log, ``hl7.log`` (every process's messages; default: stderr only).
- ``--out-dir``: the written files, ``channel-<n>/<control id>.json`` (default: DATA/out).
- ``--drop-dir``: if given, each channel also reads messages dropped as files in
  ``channel-<n>/*.hl7`` there (the paper's file readers), deleting each once it is committed.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PORT = 2575
"""MLLP's registered port; channel n listens on base + n."""
DEFAULT_METRICS_PORT = 2590
HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]*:\d{1,5}$")
URL_PASSWORD = re.compile(r"^[a-z]+://[^/@:]*:[^/@]*@")


def without_password(url: str) -> str:
    """``url`` with no password (libpq then takes it from PGPASSWORD or a passfile)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = f"{parts.username}@" if parts.username else ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=user + host))


class BadSettings(ValueError):
    """A configuration that cannot run; the message names the option."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    channels: int = 4
    db: str | None = None
    """A postgresql:// URL, or sqlite:///PATH; None: DB_DIR/queue.db."""
    db_on_command_line: bool = False
    db_dir: Path | None = None
    log_dir: Path | None = None
    out_dir: Path | None = None
    drop_dir: Path | None = None
    sink: str | None = None
    port: int = DEFAULT_PORT
    metrics_port: int = DEFAULT_METRICS_PORT
    batch: int = 100
    repeats: str = "ack"
    """A control id seen before: ``ack`` (acknowledged, not queued again: exactly once for a
    sender that resends) or ``queue`` (unique per connection only: a load generator numbering
    from 0 on every run has each run queued)."""

    def check(self) -> None:
        if not 1 <= self.channels <= 64:
            raise BadSettings(f"--channels: must be 1…64, got {self.channels}")
        if self.repeats not in ("ack", "queue"):
            raise BadSettings(f"--repeats: must be ack or queue, got {self.repeats!r}")
        if not 1 <= self.batch <= 10000:
            raise BadSettings(f"--batch: must be 1…10000, got {self.batch}")
        if not 0 <= self.metrics_port <= 65535:
            raise BadSettings(f"--metrics-port: not a port number: {self.metrics_port}")
        if not (self.port == 0 or (self.port >= 1 and self.port + self.channels - 1 <= 65535)):
            raise BadSettings(
                f"--port: channels {self.port}…{self.port + self.channels - 1} are not all ports"
            )
        if self.sink is not None and not HOST_PORT.match(self.sink):
            raise BadSettings(f"--sink: expected HOST:PORT, got {self.sink!r}")
        if self.db is not None:
            self._check_db(self.db)

    def _check_db(self, db: str) -> None:
        """A database URL caplab-hl7 can use, never with its password on the command line."""
        if not db.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise BadSettings("--db: expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
        if self.db_on_command_line and URL_PASSWORD.match(db):
            raise BadSettings(
                "--db: a password on the command line is visible to every user; "
                "use PGPASSWORD, a passfile (PGPASSFILE) or CAPLAB_HL7_DB"
            )
        if db.startswith("sqlite:///") and self.db_dir is not None:
            raise BadSettings("--db-dir: give --db sqlite:///PATH or --db-dir, not both")

    @property
    def postgres(self) -> bool:
        return self.db is not None and self.db.startswith(("postgresql://", "postgres://"))

    @property
    def db_path(self) -> Path | None:
        """The SQLite file, or None with PostgreSQL."""
        if self.postgres:
            return None
        if self.db is not None:
            return Path(self.db.removeprefix("sqlite://"))
        return (self.db_dir or self.data_dir) / "queue.db"

    @property
    def db_url(self) -> str:
        path = self.db_path
        return f"sqlite://{path.resolve()}" if path is not None else str(self.db)

    @property
    def outputs(self) -> Path:
        return self.out_dir or self.data_dir / "out"

    def ports(self) -> list[int]:
        return [0 if self.port == 0 else self.port + c for c in range(self.channels)]
