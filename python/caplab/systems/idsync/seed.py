"""``seed``: the connected directory (and/or the text source's CSV) filled with N people in bulk.

The directory is loaded with slapadd while slapd is stopped — the fast path, a 200,000-person load
takes a fraction of what LDAP adds would — and restarted if it was running, so ``seed`` can run
between trials without the caller managing slapd.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.idsync import people
from caplab.systems.idsync.directory import BASE_LDIF, EXPORT, EXPORT_LDIF, Directory


@dataclass(frozen=True)
class Seeded:
    objects: int
    attributes: int
    seconds: float


def seed_directory(directory: Directory, objects: int, attributes: int) -> Seeded:
    """Replaces the directory's whole content with the base entries and ``objects`` people (and
    an empty export subtree)."""
    people.check_attributes(attributes)
    started = time.monotonic()
    port, durable = directory.port(), directory.durable()
    was_running = directory.stop()
    ldif = directory.home / "seed.ldif"
    try:
        people.write_ldif(ldif, objects, attributes, header=BASE_LDIF)
        directory.wipe(directory.db)
        directory.load_ldif(ldif)
        directory.wipe(directory.export_db)
        directory.load_ldif(EXPORT_LDIF, EXPORT)
    finally:
        ldif.unlink(missing_ok=True)
    if was_running:
        directory.start(port, durable)
    return Seeded(objects, attributes, time.monotonic() - started)


def seed_csv(path: Path, objects: int, attributes: int) -> Seeded:
    people.check_attributes(attributes)
    started = time.monotonic()
    path.parent.mkdir(parents=True, exist_ok=True)
    people.write_csv(path, objects, attributes)
    return Seeded(objects, attributes, time.monotonic() - started)


def seed_sql(url: str, objects: int, attributes: int) -> Seeded:
    """(Re)creates the SQL source's table and fills it by COPY, the bulk path of PostgreSQL."""
    import psycopg

    from caplab.systems.idsync.errors import IdsyncError
    from caplab.systems.idsync.sources import SQL_TABLE
    from caplab.systems.idsync.store import redact

    people.check_attributes(attributes)
    started = time.monotonic()
    names = people.ATTRIBUTES[:attributes]
    columns = ", ".join(f'"{name}" text' for name in names)
    try:
        with psycopg.connect(url, connect_timeout=10) as db:
            db.execute(f"CREATE SCHEMA IF NOT EXISTS {SQL_TABLE.split('.')[0]}")
            db.execute(f"DROP TABLE IF EXISTS {SQL_TABLE}")
            db.execute(f"CREATE TABLE {SQL_TABLE} ({columns}, PRIMARY KEY (uid))")
            with db.cursor() as cursor, cursor.copy(f"COPY {SQL_TABLE} FROM STDIN") as copy:
                for n in range(1, objects + 1):
                    copy.write_row(list(people.person(n, attributes).values()))
    except psycopg.Error as e:
        raise IdsyncError(f"seeding {SQL_TABLE} at {redact(url)} failed: {str(e).splitlines()[0]}") from None
    return Seeded(objects, attributes, time.monotonic() - started)
