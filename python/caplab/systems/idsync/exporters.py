"""Export targets, where provisioned people are written: the directory's second subtree (LDAP adds,
after each sync batch commits) or a CSV file (written whole at the end of a run, then renamed into
place, so a reader never sees half a file).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, Protocol

from caplab.systems.idsync.directory import Endpoint
from caplab.systems.idsync.errors import IdsyncError
from caplab.systems.idsync.rules import EXPORTED

ENTRY_ALREADY_EXISTS = 68
EXPORT_CLASSES = ["top", "person", "organizationalPerson", "inetOrgPerson"]

ExportRow = tuple[str, dict[str, str]]
"""(DN, attributes) of one provisioned person."""


class Exporter(Protocol):
    target: str
    """The name the export table knows this target by."""
    incremental: bool
    """True: written after every batch; False: written whole once the run is done."""

    def write(self, rows: list[ExportRow]) -> None: ...

    def close(self) -> None: ...


class LdapExporter:
    """Adds each person under ou=export; one already there (a run stopped between its LDAP adds and
    the commit that records them) is replaced instead, so exporting again is harmless."""

    target = "ldap"
    incremental = True

    def __init__(self, endpoint: Endpoint) -> None:
        from caplab.systems.idsync.sources import connect

        self.endpoint = endpoint
        self._connection: Any = connect(endpoint)

    def write(self, rows: list[ExportRow]) -> None:
        from ldap3 import MODIFY_REPLACE

        connection = self._connection
        for dn, attributes in rows:
            if connection.add(dn, EXPORT_CLASSES, attributes):
                continue
            if connection.result["result"] == ENTRY_ALREADY_EXISTS:
                changes = {name: [(MODIFY_REPLACE, [value])] for name, value in attributes.items()}
                if connection.modify(dn, changes):
                    continue
            result = connection.result
            raise IdsyncError(
                f"exporting {dn} to {self.endpoint.url} failed: {result.get('description')} "
                f"{result.get('message') or ''}".strip()
            )

    def close(self) -> None:
        self._connection.unbind()


class CsvExporter:
    target = "csv"
    incremental = False

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, rows: list[ExportRow]) -> None:
        columns = ["dn", *EXPORTED]
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("w", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(columns)
                writer.writerows([dn, *(attributes.get(c, "") for c in EXPORTED)] for dn, attributes in rows)
                out.flush()
                os.fsync(out.fileno())
            partial.replace(self.path)
        except OSError as e:
            partial.unlink(missing_ok=True)
            raise IdsyncError(f"cannot write the CSV export {self.path}: {e.strerror}") from None

    def close(self) -> None:
        """Nothing held open between writes."""
