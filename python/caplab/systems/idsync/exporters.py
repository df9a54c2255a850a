"""Export targets, where provisioned people are written: the directory's second subtree (LDAP adds
by ldapmodify, after each sync batch commits) or a CSV file (written whole at the end of a run,
then renamed into place, so a reader never sees half a file).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Protocol

from caplab.systems.idsync.directory import Endpoint, last_lines
from caplab.systems.idsync.errors import IdsyncError
from caplab.systems.idsync.people import ldif_line
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
    """Adds each person under ou=export with OpenLDAP's own ldapmodify, a batch per call: the C
    client encodes an add in microseconds where ldap3's pure-Python BER encoder took milliseconds,
    which made the export, not the synchronisation, the whole cost of a sync. A batch in which some
    people already exist (a run stopped between its adds and the commit recording them) is written
    again through ldap3, adding or replacing each, so exporting again is harmless."""

    target = "ldap"
    incremental = True

    def __init__(self, endpoint: Endpoint) -> None:
        if shutil.which("ldapmodify") is None:
            raise IdsyncError("ldapmodify not found: install Debian's ldap-utils package")
        self.endpoint = endpoint
        self._connection: Any = None

    def write(self, rows: list[ExportRow]) -> None:
        if not rows:
            return
        ldif = "".join(add_record(dn, attributes) for dn, attributes in rows)
        e = self.endpoint
        command = ["ldapmodify", "-c", "-x", "-H", e.url, "-D", e.root_dn, "-y", str(e.password_file)]
        done = subprocess.run(command, input=ldif, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        failures = [line for line in done.stderr.splitlines() if line.startswith("ldap_add:")]
        if failures and all(f"({ENTRY_ALREADY_EXISTS})" in line for line in failures):
            self.add_or_replace(rows)
            return
        raise IdsyncError(f"exporting to {e.url} failed: {last_lines(done.stderr)}")

    def add_or_replace(self, rows: list[ExportRow]) -> None:
        from ldap3 import MODIFY_REPLACE

        from caplab.systems.idsync.sources import connect

        if self._connection is None:
            self._connection = connect(self.endpoint)
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
        if self._connection is not None:
            self._connection.unbind()


def add_record(dn: str, attributes: dict[str, str]) -> str:
    lines = [ldif_line("dn", dn), "changetype: add", *(f"objectClass: {c}" for c in EXPORT_CLASSES)]
    lines += [ldif_line(name, value) for name, value in attributes.items()]
    return "\n".join(lines) + "\n\n"


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
