"""Connected data sources, the paper's management agents: the LDAP directory (read with a paged
search), a text file (CSV, the paper's text MA) and a PostgreSQL table (the paper's SQL MA).
Each yields the objects it holds, one SourceObject per person, in pages so staging can commit a
batch at a time.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from caplab.systems.idsync.directory import PEOPLE, Endpoint
from caplab.systems.idsync.errors import IdsyncError

Attributes = dict[str, str | list[str]]
"""Attribute name → its value, or its values when the source holds more than one."""
PAGE_SIZE = 1000
SKIPPED = frozenset({"objectclass"})
"""Structural, not data: every person has the same ones, and nothing flows from them."""


@dataclass(frozen=True)
class SourceObject:
    anchor: str
    """What identifies the object in its source across runs (the DN; the CSV's anchor column)."""
    attributes: Attributes


class Source(Protocol):
    name: str
    """The management agent's name: the connector space is partitioned by it."""

    def pages(self) -> Iterator[list[SourceObject]]: ...


class LdapSource:
    """Every inetOrgPerson under ou=people, by a paged search (RFC 2696) bound as the root DN."""

    name = "ldap"

    def __init__(self, endpoint: Endpoint, base: str = PEOPLE, page_size: int = PAGE_SIZE) -> None:
        self.endpoint = endpoint
        self.base = base
        self.page_size = page_size

    def pages(self) -> Iterator[list[SourceObject]]:
        from ldap3 import SUBTREE
        from ldap3.core.exceptions import LDAPException

        connection = connect(self.endpoint)
        try:
            cookie: bytes | None = None
            while True:
                connection.search(
                    self.base,
                    "(objectClass=inetOrgPerson)",
                    search_scope=SUBTREE,
                    attributes=["*"],
                    paged_size=self.page_size,
                    paged_cookie=cookie,
                )
                if connection.result["result"] != 0:
                    raise IdsyncError(f"the search under {self.base} failed: {describe(connection.result)}")
                yield [entry_object(e) for e in connection.response if e.get("type") == "searchResEntry"]
                control = connection.result.get("controls", {}).get("1.2.840.113556.1.4.319", {})
                cookie = control.get("value", {}).get("cookie")
                if not cookie:
                    return
        except LDAPException as e:
            raise IdsyncError(f"reading the directory at {self.endpoint.url} failed: {e}") from None
        finally:
            connection.unbind()


def entry_object(entry: dict[str, Any]) -> SourceObject:
    attributes: Attributes = {}
    for name, raw in entry["raw_attributes"].items():
        if name.lower() in SKIPPED:
            continue
        values = [v.decode() for v in raw]
        attributes[name] = values[0] if len(values) == 1 else values
    return SourceObject(entry["dn"].lower(), attributes)


def connect(endpoint: Endpoint) -> Any:
    """A bound ldap3 connection, or an IdsyncError that says what the server said."""
    from ldap3 import NONE, Connection, Server
    from ldap3.core.exceptions import LDAPBindError, LDAPException, LDAPSocketOpenError

    server = Server(endpoint.url, get_info=NONE, connect_timeout=10)
    try:
        return Connection(
            server,
            endpoint.root_dn,
            endpoint.password,
            auto_bind=True,
            raise_exceptions=False,
            check_names=False,  # no schema was read (get_info=NONE): nothing to check names against
        )
    except LDAPBindError:
        raise IdsyncError(
            f"the directory at {endpoint.url} refused the bind as {endpoint.root_dn}: invalid credentials "
            "(check the password file)"
        ) from None
    except LDAPSocketOpenError:
        raise IdsyncError(f"cannot reach the directory at {endpoint.url}: is it started?") from None
    except LDAPException as e:
        raise IdsyncError(f"binding to the directory at {endpoint.url} failed: {e}") from None


def describe(result: dict[str, Any]) -> str:
    message = result.get("message") or ""
    return f"{result.get('description', result.get('result'))}{': ' + message if message else ''}"


class CsvSource:
    """A text file with a header of attribute names and one row per object (the paper's text MA)."""

    name = "csv"

    def __init__(self, path: Path, anchor: str = "uid", page_size: int = PAGE_SIZE) -> None:
        self.path = path
        self.anchor = anchor
        self.page_size = page_size

    def pages(self) -> Iterator[list[SourceObject]]:
        try:
            source = self.path.open(newline="")
        except OSError as e:
            raise IdsyncError(f"cannot read the CSV source {self.path}: {e.strerror}") from None
        with source:
            reader = csv.DictReader(source)
            if reader.fieldnames is None or self.anchor not in reader.fieldnames:
                raise IdsyncError(f"{self.path}: the header has no anchor column {self.anchor!r}")
            page: list[SourceObject] = []
            for line, row in enumerate(reader, 2):
                anchor = row.get(self.anchor)
                if not anchor:
                    raise IdsyncError(f"{self.path}:{line}: no value in the anchor column {self.anchor!r}")
                page.append(SourceObject(anchor, {k: v for k, v in row.items() if k and v}))
                if len(page) == self.page_size:
                    yield page
                    page = []
            if page:
                yield page


SQL_TABLE = "idsync_source.people"
"""The SQL source's table: one text column per attribute, one row per person (seed --sql fills it)."""


class SqlSource:
    """Every row of SQL_TABLE, read through a server-side cursor a page at a time (the paper's SQL
    MA), so a large table is never held whole in memory."""

    name = "sql"

    def __init__(self, url: str, anchor: str = "uid", page_size: int = PAGE_SIZE) -> None:
        self.url = url
        self.anchor = anchor
        self.page_size = page_size

    def pages(self) -> Iterator[list[SourceObject]]:
        import psycopg

        from caplab.systems.idsync.store import redact

        try:
            with (
                psycopg.connect(self.url, connect_timeout=10) as db,
                db.cursor(name="idsync_stage") as cursor,
            ):
                cursor.execute(f"SELECT * FROM {SQL_TABLE}")
                while rows := cursor.fetchmany(self.page_size):
                    names = [c.name for c in cursor.description or ()]
                    yield [self.source_object(dict(zip(names, row, strict=True))) for row in rows]
        except psycopg.Error as e:
            raise IdsyncError(
                f"reading {SQL_TABLE} at {redact(self.url)} failed: {str(e).splitlines()[0]}"
            ) from None

    def source_object(self, row: dict[str, str | None]) -> SourceObject:
        anchor = row.get(self.anchor)
        if not anchor:
            raise IdsyncError(f"{SQL_TABLE}: a row has no {self.anchor!r}")
        return SourceObject(anchor, {k: v for k, v in row.items() if v})
