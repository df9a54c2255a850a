"""A throwaway PostgreSQL for the test session: ``initdb`` into a temporary directory, started as
an ordinary process on a free loopback port (as the unprivileged ``caplab-pg`` when the tests run
as root, since PostgreSQL refuses root), stopped and deleted at the end. The system cluster is
never used, and every password is random.

The server launch is pgpair's (``caplab.systems.pgpair.server``): one way to run PostgreSQL.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from caplab.systems.pgpair.server import Server, ServerError, ServerUser, bin_dir, free_port

ROLE = "caplab"
DATABASE = "caplab_test"
ADMIN = "postgres"


@dataclass
class ThrowawayPostgres:
    """A running test server; ``url`` connects as the test role to the test database."""

    server: Server
    directory: Path
    url: str

    def stop(self) -> None:
        """Stops the server (immediate: nothing in it is worth a checkpoint) and deletes it."""
        try:
            self.server.stop("immediate")
        except ServerError:
            self.server.kill()
        self.server.wait_gone()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> ThrowawayPostgres:
    """initdb, start, and create the test role (random password, may create databases) owning the
    test database. Durability is off (fsync, full-page writes): the data dies with the session.
    Whatever was made is removed again if a step fails."""
    directory = Path(tempfile.mkdtemp(prefix="caplab-test-pg-"))
    directory.chmod(0o755)  # the server user enters it to reach its data directory
    server: Server | None = None
    try:
        user = ServerUser.for_servers()
        user.check_reachable(directory)
        server = Server("test", directory / "data", free_port(), user, bin_dir())
        admin_password = secrets.token_urlsafe(24)
        server.initdb(ADMIN, admin_password)
        server.configure(
            {
                "listen_addresses": "127.0.0.1",
                "unix_socket_directories": "",
                "max_connections": 200,
                "fsync": "off",
                "full_page_writes": "off",
                "synchronous_commit": "off",
            }
        )
        server.start()
        password = secrets.token_urlsafe(24)
        with psycopg.connect(
            host="127.0.0.1",
            port=server.port,
            user=ADMIN,
            password=admin_password,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD {}").format(
                    sql.Identifier(ROLE), sql.Literal(password)
                )
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(DATABASE), sql.Identifier(ROLE))
            )
        url = f"postgresql://{ROLE}:{password}@127.0.0.1:{server.port}/{DATABASE}"
        return ThrowawayPostgres(server, directory, url)
    except BaseException:
        if server is not None:
            with contextlib.suppress(ServerError):
                server.stop("immediate")
            server.wait_gone()
        shutil.rmtree(directory, ignore_errors=True)
        raise
