"""The queue's own PostgreSQL for a study: one server whose data files and log (``pg_wal``, placed
with ``initdb --waldir``) go where the study's storage layout puts them, e.g. on two throttled
volumes — the paper's MDF/NDF and LDF apart. SQLite cannot do that (its WAL is always beside the
database), which is why the hl7 study queues in PostgreSQL.

The server is pgpair's launch (``caplab.systems.pgpair.server``): Debian's binaries, an
unprivileged server user when we are root, a random password in a libpq passfile that is never
printed. It listens on every address of its network namespace, so an engine across an emulated
link reaches it at the link's address; clients authenticate with scram-sha-256 from loopback and
the links' private 10.203.0.0/16 only. Every process carries ``hl7db`` in its command line (the
data directory's name and ``cluster_name``): a study's ``db`` role matches it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.pgpair.server import Server, ServerError, ServerUser, bin_dir

NAME = "hl7db"
"""In the data directory's name and in every server process's title (``caplab-hl7db``)."""
ROLE = "caplab"
DATABASE = "postgres"
CLIENTS = ("127.0.0.1/32", "10.203.0.0/16")
"""Where clients may connect from: loopback, and the emulated links' addresses."""


@dataclass(frozen=True)
class Database:
    """Where one queue database lives: its data directory's parent and its log's."""

    data: Path
    wal: Path
    port: int

    @property
    def data_dir(self) -> Path:
        return self.data / NAME

    @property
    def wal_dir(self) -> Path:
        return self.wal / f"{NAME}-wal"

    def server(self) -> Server:
        return Server(NAME, self.data_dir, self.port, ServerUser.for_servers(), bin_dir())

    def start(self, passfile: Path, settings: dict[str, str | int]) -> dict[str, object]:
        """initdb (data here, log there) unless it exists, then start it and wait until it accepts
        connections; the passfile (0600) lets any client of ours log in as ``caplab``."""
        server = self.server()
        if not (self.data_dir / "PG_VERSION").exists():
            for parent in (self.data, self.wal):
                parent.mkdir(parents=True, exist_ok=True)
                server.user.check_reachable(parent)
            self._initdb(server, passfile)
        server.configure({"listen_addresses": "*", "unix_socket_directories": "", **settings})
        server.start()
        return {
            "port": self.port,
            "data": str(self.data_dir),
            "wal": str(self.wal_dir),
            "pid": server.postmaster_pid(),
        }

    def _initdb(self, server: Server, passfile: Path) -> None:
        password = secrets.token_urlsafe(24)
        # a throwaway queue: initdb's fsyncs on a throttled HDD take minutes
        server.initdb(ROLE, password, waldir=self.wal_dir, clients=CLIENTS, replication=False, sync=False)
        passfile.parent.mkdir(parents=True, exist_ok=True)
        passfile.touch(mode=0o600)
        passfile.chmod(0o600)
        escaped = password.replace("\\", "\\\\").replace(":", "\\:")
        passfile.write_text(f"*:{self.port}:*:{ROLE}:{escaped}\n")

    def stop(self, mode: str = "fast") -> None:
        """A fast shutdown (``immediate``: no shutdown checkpoint, for a queue thrown away with its
        volume); nothing to do when it is not running."""
        server = self.server()
        try:
            server.stop(mode)
        except ServerError:
            server.kill()
        server.wait_gone()
