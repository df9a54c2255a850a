"""Seeding: N databases ``ag_0 … ag_{N-1}``, each with pgbench's own tpcb schema and data
(``pgbench -i -s SCALE``), so pgbench can run beside caplab on the same data.

It runs on the primary before the standby exists (the base backup then copies the result at disk
speed instead of replaying it). Tables are generated on the server (``-I dtGvp``), which spares the
round trips of a client-side COPY. Only one database is built by pgbench (``TEMPLATE``, below); the
others are copies of it (``CREATE DATABASE … TEMPLATE``), several at once: the same tables, rows, keys and
vacuumed state, at about 0.3 s a database against 1.4 s for pgbench's generate, vacuum and
index steps again (20 databases at scale 1: 16.8 s to a streaming pair before, 9 s after).
"""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path

from caplab.systems.pgpair.server import Server, ServerError

PREFIX = "ag_"
PATTERN = PREFIX + "{i}"
"""Database names, ``i`` from 0 (the ``ag_{i}`` of a caplab target's database list)."""


TEMPLATE = "caplab_seed"
"""The database pgbench fills and the others are copied from, then dropped. Not ``ag_0``: a copy
fails while any other session is in its template, and a client may connect to ``ag_0`` as soon as
the server listens (the failover observer's did, and its study's seeding failed)."""

MAX_DATABASES = 5000
MAX_SCALE = 1000


def check(count: int, scale: int, error: type[ServerError]) -> None:
    """The seeding limits of every system that seeds with this module (pgpair, pgha), checked
    before anything starts: ``error`` (the system's own kind) names ``start``'s option."""
    if not 0 <= count <= MAX_DATABASES:
        raise error(f"--databases must be 0…{MAX_DATABASES}, got {count}")
    if not 1 <= scale <= MAX_SCALE:
        raise error(f"--scale must be 1…{MAX_SCALE}, got {scale}")


def names(count: int) -> list[str]:
    return [PATTERN.format(i=i) for i in range(count)]


def seed(primary: Server, superuser: str, passfile: Path, count: int, scale: int, jobs: int = 0) -> None:
    """Creates and fills ``count`` databases on ``primary``: a single one by pgbench; more as
    copies of ``TEMPLATE``, which pgbench fills, ``jobs`` at a time (0: 2 × cores). The first
    failure stops the rest and is raised with the client's own message."""
    if count == 0:
        return
    workers = jobs or 2 * (os.cpu_count() or 1)
    env = primary.env(passfile)
    if count == 1:
        _one(primary, superuser, env, names(1)[0], scale)
        return
    _one(primary, superuser, env, TEMPLATE, scale)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_copy, primary, superuser, env, TEMPLATE, name) for name in names(count)]
        try:
            for future in concurrent.futures.as_completed(futures):
                future.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    _drop(primary, superuser, env, TEMPLATE)


def _connection(primary: Server, superuser: str) -> list[str]:
    return ["-h", primary.host, "-p", str(primary.port), "-U", superuser]


def _one(primary: Server, superuser: str, env: dict[str, str], name: str, scale: int) -> None:
    connection = _connection(primary, superuser)
    try:
        primary.user.run(
            [str(primary.bin / "createdb"), "-w", *connection, name],
            env=env,
            what=f"creating database {name}",
        )
        primary.user.run(
            [str(primary.bin / "pgbench"), "-i", "-q", "-I", "dtGvp", "-s", str(scale), *connection, name],
            env=env,
            what=f"pgbench -i in {name}",
        )
    except ServerError as e:
        raise ServerError(f"seeding {name}: {e}") from None


def _drop(primary: Server, superuser: str, env: dict[str, str], name: str) -> None:
    primary.user.run(
        [str(primary.bin / "dropdb"), "-w", *_connection(primary, superuser), name],
        env=env,
        what=f"dropping database {name}",
    )


def _copy(primary: Server, superuser: str, env: dict[str, str], template: str, name: str) -> None:
    """``name`` as a copy of the seeded ``template``. Copies of one template may run at once: a
    copy reads the template's files and does not connect to it."""
    try:
        primary.user.run(
            [str(primary.bin / "createdb"), "-w", *_connection(primary, superuser), "-T", template, name],
            env=env,
            what=f"creating database {name} from {template}",
        )
    except ServerError as e:
        raise ServerError(f"seeding {name}: {e}") from None
