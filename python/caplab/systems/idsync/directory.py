"""The connected directory: an OpenLDAP slapd run as an ordinary process, never the system service.

Everything lives in one home directory D:

    D/slapd.conf     the configuration (0600: it holds the root password's salted hash)
    D/rootpw         the root DN's password, generated at the first start (0600, never printed)
    D/db/            the mdb database of the people (dc=idsync,dc=test)
    D/export-db/     the export subtree's own mdb database (ou=export,…), so emptying the export
                     between runs is a file removal, not N LDAP deletes. Not glued to the
                     suffix (slapd 2.5 refuses the second page of a paged search through glue):
                     search it by its own base
    D/directory.json port, suffix and root DN (no secret), read by seed, stage and export
    D/slapd.pid      the running slapd's pid; D/slapd.log its output

The database is ``dbnosync`` unless started with ``durable=True`` (``--durable``): the directory
stands in for the connected systems, not for what is being sized, and with an fsync per LDAP add
(about 10 ms here) the export would measure slapd's disk instead of idsync.

slapd runs in the foreground (``-d none``: errors only) in a session of its own, so ``stop`` can
signal exactly the process ``start`` made, and a failed start shows slapd's own words from
D/slapd.log.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from caplab.systems.exited import exited
from caplab.systems.idsync.errors import IdsyncError

SUFFIX = "dc=idsync,dc=test"
ROOT_DN = f"cn=admin,{SUFFIX}"
PEOPLE = f"ou=people,{SUFFIX}"
EXPORT = f"ou=export,{SUFFIX}"
"""The second subtree sync provisions into (the paper's second management agent's target)."""
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0
MAP_SIZE = 32 << 30
"""mdb's map is sparse: this bounds the database, it does not allocate it."""

BASE_LDIF = f"""dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
dc: idsync
o: idsync

dn: {PEOPLE}
objectClass: organizationalUnit
ou: people

"""
EXPORT_LDIF = f"""dn: {EXPORT}
objectClass: organizationalUnit
ou: export

"""


@dataclass(frozen=True)
class Endpoint:
    """How a client reaches and binds to the directory."""

    url: str
    root_dn: str
    password: str
    password_file: Path
    """Where the password came from, for OpenLDAP's own clients (``-y``: never on a command line)."""

    def __repr__(self) -> str:
        return f"Endpoint(url={self.url!r}, root_dn={self.root_dn!r})"


def require_tools() -> None:
    missing = [t for t in ("slapd", "slapadd") if shutil.which(t) is None]
    if missing:
        raise IdsyncError(
            f"{' and '.join(missing)} not found: install Debian's slapd package "
            "(DEBIAN_FRONTEND=noninteractive apt-get install -y slapd ldap-utils)"
        )


class Directory:
    """One slapd home directory (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        self.home = home.resolve()
        self.conf = self.home / "slapd.conf"
        self.password_file = self.home / "rootpw"
        self.db = self.home / "db"
        self.export_db = self.home / "export-db"
        self.state_file = self.home / "directory.json"
        self.pid_file = self.home / "slapd.pid"
        self.log_file = self.home / "slapd.log"

    # configuration -------------------------------------------------------------------------

    def configure(self, port: int, durable: bool = False) -> None:
        """Writes the configuration for ``port``; the password is made once and then kept."""
        require_tools()
        self.home.mkdir(parents=True, exist_ok=True)
        self.db.mkdir(exist_ok=True)
        self.export_db.mkdir(exist_ok=True)
        if not self.password_file.exists():
            write_private(self.password_file, secrets.token_urlsafe(24))
        write_private(self.conf, self._slapd_conf(ssha(self.password()), durable))
        state = {"port": port, "durable": durable, "suffix": SUFFIX, "root_dn": ROOT_DN}
        self.state_file.write_text(json.dumps(state) + "\n")
        if not (self.db / "data.mdb").exists():
            self.load_ldif(BASE_LDIF)
        if not (self.export_db / "data.mdb").exists():
            self.load_ldif(EXPORT_LDIF, EXPORT)

    def _slapd_conf(self, hashed: str, durable: bool) -> str:
        sync = "" if durable else "dbnosync"
        schemas = "\n".join(
            f"include {SCHEMA_DIR / name}.schema" for name in ("core", "cosine", "nis", "inetorgperson")
        )
        return f"""# written by caplab.systems.idsync; regenerated at every start
{schemas}
modulepath {MODULE_DIR}
moduleload back_mdb
pidfile {self.home / "slapd.run.pid"}
argsfile {self.home / "slapd.args"}
loglevel none
sizelimit unlimited

database mdb
suffix "{EXPORT}"
rootdn "{ROOT_DN}"
directory {self.export_db}
maxsize {MAP_SIZE}
index objectClass eq
{sync}

database mdb
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {hashed}
directory {self.db}
maxsize {MAP_SIZE}
index objectClass eq
index uid,employeeNumber eq
{sync}
"""

    def password(self) -> str:
        try:
            return self.password_file.read_text().strip()
        except FileNotFoundError:
            raise IdsyncError(
                f"no directory in {self.home} (run: directory start --data-dir {self.home})"
            ) from None

    def state(self) -> dict[str, object]:
        try:
            state: dict[str, object] = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            raise IdsyncError(
                f"no directory in {self.home} (run: directory start --data-dir {self.home})"
            ) from None
        return state

    def port(self) -> int:
        return int(str(self.state()["port"]))

    def durable(self) -> bool:
        return bool(self.state().get("durable", False))

    def endpoint(self, password_file: Path | None = None) -> Endpoint:
        source = self.password_file if password_file is None else password_file
        password = self.password() if password_file is None else read_secret(password_file)
        return Endpoint(f"ldap://127.0.0.1:{self.port()}", ROOT_DN, password, source)

    # database ------------------------------------------------------------------------------

    def load_ldif(self, ldif: str | Path, suffix: str = SUFFIX) -> None:
        """slapadd into the (stopped) database of ``suffix``: the bulk path, many times faster than
        LDAP adds because it skips the protocol and commits once per many entries (``-q``)."""
        if self.running_pid() is not None:
            raise IdsyncError("slapadd needs the directory stopped")
        command = ["slapadd", "-q", "-f", str(self.conf), "-b", suffix]
        if isinstance(ldif, Path):
            done = subprocess.run([*command, "-l", str(ldif)], capture_output=True, text=True, check=False)
        else:
            done = subprocess.run(command, input=ldif, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise IdsyncError(f"slapadd failed: {last_lines(done.stderr)}")

    def wipe(self, database: Path) -> None:
        """Empties one database (stopped): the next load starts from nothing."""
        if self.running_pid() is not None:
            raise IdsyncError("the directory must be stopped to empty its database")
        shutil.rmtree(database, ignore_errors=True)
        database.mkdir()

    def empty_export(self) -> None:
        """Removes everything provisioned under ou=export (restarting slapd if it ran), so every
        run's export starts from the same empty subtree."""
        port, durable = self.port(), self.durable()
        was_running = self.stop()
        self.wipe(self.export_db)
        self.load_ldif(EXPORT_LDIF, EXPORT)
        if was_running:
            self.start(port, durable)

    # process -------------------------------------------------------------------------------

    def running_pid(self) -> int | None:
        """The pid of the slapd this home started, if it still runs (a stale pid file, or a pid
        reused by another program, counts as not running)."""
        try:
            pid = int(self.pid_file.read_text())
            cmdline = psutil.Process(pid).cmdline()
        except (FileNotFoundError, ValueError, psutil.Error):
            return None
        return pid if str(self.conf) in cmdline else None

    def start(self, port: int | None = None, durable: bool | None = None) -> None:
        """Starts slapd; ``None`` keeps the port or durability of the last start."""
        if self.running_pid() is not None:
            raise IdsyncError(f"the directory in {self.home} is already running (port {self.port()})")
        self.configure(self.port() if port is None else port, self.durable() if durable is None else durable)
        port = self.port()
        with self.log_file.open("w") as log:
            process = subprocess.Popen(
                ["slapd", "-f", str(self.conf), "-h", f"ldap://127.0.0.1:{port}/", "-d", "none"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                said = slapd_messages(self.log_file.read_text())
                raise IdsyncError(f"slapd exited with status {process.returncode}: {last_lines(said)}")
            if listens(process.pid, port):
                return
            time.sleep(0.05)
        process.kill()
        process.wait()
        self.pid_file.unlink(missing_ok=True)
        raise IdsyncError(f"slapd did not answer on port {port} within {START_TIMEOUT_S:.0f} s")

    def stop(self) -> bool:
        """Stops slapd (SIGTERM, so mdb closes cleanly; SIGKILL after a minute). False if it was
        not running."""
        pid = self.running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        process = psutil.Process(pid)
        os.kill(pid, signal.SIGTERM)
        if not exited(process, STOP_TIMEOUT_S):
            process.kill()
            exited(process, STOP_TIMEOUT_S)
        self.pid_file.unlink(missing_ok=True)
        return True


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself listens on ``port`` (a connection alone could reach another
    program that holds the port, while our slapd fails to bind it)."""
    try:
        sockets = psutil.Process(pid).net_connections("tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in sockets)


def ssha(password: str) -> str:
    """slapd's ``{SSHA}``: SHA-1 of password + salt, then the salt, base64 — so the configuration
    file does not hold the password itself."""
    salt = secrets.token_bytes(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def write_private(path: Path, text: str) -> None:
    """Writes a file only its owner can read, created with that mode (never briefly readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def read_secret(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        raise IdsyncError(f"cannot read the password file {path}: {e.strerror}") from None


def slapd_messages(log: str) -> str:
    """slapd's log without its banner and without each line's time and thread prefix."""
    lines = []
    for line in log.splitlines():
        words = line.split(" ", 2)
        if len(words) == 3 and words[1].startswith("0x"):
            line = words[2]
        if not line.startswith(("@(#)", "\t", "slapd stopped", "connections_destroy")):
            lines.append(line)
    return "\n".join(lines)


def last_lines(text: str, n: int = 5) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) or "(no output)"
