"""Driving idsync the way a job does: each operation a shell command (``python -m
caplab.systems.idsync …``), its JSON answer parsed; and counting what slapd itself holds with
ldapsearch, a client that is not idsync's own."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.require import SLAPD, require

TIMEOUT_S = 300


def idsync(*args: str | Path | int, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "caplab.systems.idsync", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def answer(*args: str | Path | int) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(idsync(*args).stdout)
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def require_slapd() -> None:
    """Skip without slapd and its tools, or fail under ``CAPLAB_REQUIRE_SLAPD=1``."""
    __tracebackhide__ = True
    missing = [t for t in ("slapd", "slapadd", "ldapsearch") if shutil.which(t) is None]
    if missing:
        require(SLAPD, f"{', '.join(missing)} not installed (Debian packages slapd and ldap-utils)")


@dataclass(frozen=True)
class StoreDirs:
    """A SQLite store with its data, change log and temp files in three directories."""

    root: Path

    @property
    def options(self) -> list[str | Path]:
        return ["--data", self.root / "data", "--log", self.root / "log", "--temp", self.root / "temp"]


def ldapsearch(directory: Path, *args: str) -> str:
    """ldapsearch bound as the root DN with the directory's own password file."""
    port = json.loads((directory / "directory.json").read_text())["port"]
    bind = ["-x", "-LLL", "-o", "ldif-wrap=no", "-H", f"ldap://127.0.0.1:{port}"]
    bind += ["-D", "cn=admin,dc=idsync,dc=test", "-y", str(directory / "rootpw")]
    done = subprocess.run(
        ["ldapsearch", *bind, *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def ldap_count(directory: Path, base: str) -> int:
    """inetOrgPerson entries under ``base``, as slapd reports them to ldapsearch."""
    found = ldapsearch(directory, "-b", base, "-E", "pr=1000/noprompt", "(objectClass=inetOrgPerson)", "1.1")
    return sum(1 for line in found.splitlines() if line.startswith("dn: "))


def ldap_entry(directory: Path, dn: str) -> dict[str, str]:
    found = ldapsearch(directory, "-s", "base", "-b", dn)
    return dict(line.split(": ", 1) for line in found.splitlines() if ": " in line)
