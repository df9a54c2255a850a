"""One PostgreSQL server as an ordinary process: Debian's server binaries, a data directory of its
own, a loopback port, and an unprivileged OS user when we are root (PostgreSQL refuses to run as
root). The system cluster (``pg_ctlcluster``) is never used or touched.

Every server program runs as the server user; clients (psql, pgbench) may run as anyone. The
password lives in a libpq password file (``pgpass``, mode 0600, owned by the server user), which
the standby's ``primary_conninfo`` and the tools read, so it is never on a command line.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from caplab.systems.launch import process_tree

SERVER_USER = "caplab-pg"
"""The system user the servers run as when we are root (created on first use)."""
BIN_GLOB = "/usr/lib/postgresql/*/bin"
COMMAND_TIMEOUT_S = 300.0
USERADD_TRIES = 3
"""Attempts at creating the server user: another process may be creating it at the same moment."""


class ServerError(RuntimeError):
    """A server program failed; the message names the step and carries the program's own words."""


@dataclass(frozen=True)
class ServerUser:
    """Who server programs run as: ``uid``/``gid`` to switch to, or None to stay ourselves."""

    name: str
    uid: int | None = None
    gid: int | None = None

    @classmethod
    def for_servers(cls, name: str = SERVER_USER) -> ServerUser:
        """Ourselves when unprivileged; as root, the system user ``name`` (created if missing)."""
        if os.geteuid() != 0:
            return cls(pwd.getpwuid(os.geteuid()).pw_name)
        for attempt in range(USERADD_TRIES):
            with contextlib.suppress(KeyError):
                entry = pwd.getpwnam(name)
                return cls(name, entry.pw_uid, entry.pw_gid)
            try:
                _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
            except ServerError:
                # Another process creating it at the same time (a second test worker) makes useradd
                # say it exists, or that /etc/passwd is locked: look again.
                if attempt == USERADD_TRIES - 1:
                    raise
                time.sleep(0.5)
        entry = pwd.getpwnam(name)
        return cls(name, entry.pw_uid, entry.pw_gid)

    def own(self, path: Path) -> None:
        """Hands ``path`` (one entry, not a tree) to the server user."""
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def check_reachable(self, path: Path) -> None:
        """Fails clearly when the server user cannot enter a parent of ``path`` (e.g. a 0700
        directory of root's), which PostgreSQL would report far less plainly."""
        if self.uid is None:
            return
        groups = {g.gr_gid for g in grp.getgrall() if self.name in g.gr_mem} | {self.gid}
        for parent in reversed(path.resolve().parents):
            st = parent.stat()
            if st.st_uid == self.uid:
                ok = st.st_mode & stat.S_IXUSR
            elif st.st_gid in groups:
                ok = st.st_mode & stat.S_IXGRP
            else:
                ok = st.st_mode & stat.S_IXOTH
            if not ok:
                raise ServerError(
                    f"the server user {self.name} cannot enter {parent} (mode {stat.filemode(st.st_mode)}); "
                    "choose a data directory every user may reach, e.g. under /tmp or /var/tmp "
                    "(in a study: under {runtime}, the cell's runtime directory)"
                )

    def run(self, cmd: Sequence[str], *, env: dict[str, str] | None = None, what: str = "") -> str:
        """Runs a server program as this user; returns its stdout, raises ServerError on failure."""
        return _run(cmd, env=env, what=what, user=self)


def _run(
    cmd: Sequence[str], *, env: dict[str, str] | None = None, what: str = "", user: ServerUser | None = None
) -> str:
    switch = user is not None and user.uid is not None
    try:
        done = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            cwd="/",
            user=user.uid if switch and user else None,
            group=user.gid if switch and user else None,
            extra_groups=[] if switch else None,
        )
    except FileNotFoundError as e:
        raise ServerError(f"{what or cmd[0]}: {e.filename} is not installed") from None
    except subprocess.TimeoutExpired:
        raise ServerError(f"{what or cmd[0]}: no answer within {COMMAND_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        words = (done.stderr.strip() or done.stdout.strip())[-1500:]
        raise ServerError(f"{what or Path(cmd[0]).name} failed (exit {done.returncode}): {words}")
    return done.stdout


def bin_dir() -> Path:
    """The newest installed PostgreSQL server's ``bin`` directory (Debian: package ``postgresql``)."""
    found = sorted(Path("/").glob(BIN_GLOB.lstrip("/")), key=lambda p: _version(p.parent.name))
    found = [p for p in found if (p / "initdb").exists() and (p / "pg_ctl").exists()]
    if not found:
        raise ServerError(
            f"no PostgreSQL server binaries in {BIN_GLOB} (install them: apt-get install -y postgresql)"
        )
    return found[-1]


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def free_port() -> int:
    """A loopback port nothing listens on now (bound once, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def write_passfile(path: Path, user: ServerUser, role: str, password: str, host: str = "127.0.0.1") -> None:
    """A libpq password file for ``role`` on ``host`` (``*``: any), any port and database, mode
    0600."""
    path.touch(mode=0o600)
    os.chmod(path, 0o600)
    path.write_text(f"{host}:*:*:{role}:{_pgpass_escape(password)}\n")
    user.own(path)


def _pgpass_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


def find_password(given: str | None, env: str, passfile: Path, error: type[ServerError]) -> str:
    """A server set's password: ``given``, else ``$env``, else the one ``write_passfile`` put in
    ``passfile`` (its first line's fifth field, libpq's backslash escapes undone); ``error`` (the
    set's own kind) when there is none."""
    found = given or os.environ.get(env)
    if found:
        return found
    try:
        line = passfile.read_text().splitlines()[0]
    except (OSError, IndexError):
        raise error(f"no password: set {env} or restore {passfile}") from None
    fields: list[str] = []
    current = ""
    escaped = False
    for ch in line:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":" and len(fields) < 4:
            fields.append(current)
            current = ""
        else:
            current += ch
    return current


def new_data_dir(data_dir: Path, error: type[ServerError]) -> ServerUser:
    """Makes ``data_dir`` (it must be new or empty, else ``error``) a directory every user may
    enter, and returns the user the servers in it will run as, checked to reach it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if any(data_dir.iterdir()):
        raise error(f"{data_dir} is not empty: give a new or empty --data-dir")
    data_dir.chmod(0o755)
    user = ServerUser.for_servers()
    user.check_reachable(data_dir)
    return user


@dataclass(frozen=True)
class Server:
    """One data directory and the address and port its postmaster listens on."""

    name: str
    data_dir: Path
    port: int
    user: ServerUser
    bin: Path
    host: str = "127.0.0.1"

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    def env(self, passfile: Path | None = None) -> dict[str, str]:
        """A plain environment for server programs: C locale, our binaries first, no PG* leaks."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", PATH=f"{self.bin}:{env.get('PATH', '/usr/bin:/bin')}")
        if passfile is not None:
            env["PGPASSFILE"] = str(passfile)
        return env

    def initdb(
        self,
        superuser: str,
        password: str,
        *,
        waldir: Path | None = None,
        clients: tuple[str, ...] = ("127.0.0.1/32",),
        replication: bool = True,
        sync: bool = True,
    ) -> None:
        """A new cluster: ``superuser`` with ``password`` (given through a 0600 file removed
        after), scram-sha-256 over TCP from ``clients`` (CIDRs) for databases and, with
        ``replication``, for replication; nothing on sockets. ``waldir`` puts the log on a volume of
        its own (initdb links pg_wal there); ``sync=False`` skips initdb's fsyncs, for a throwaway
        cluster on a throttled volume where they take minutes."""
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=waldir is not None)
        self.user.own(self.data_dir)
        if waldir is not None:
            waldir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.user.own(waldir)
        pwfile = self.data_dir.parent / f".{self.name}.pw"
        pwfile.touch(mode=0o600)
        try:
            pwfile.write_text(password + "\n")
            self.user.own(pwfile)
            self.user.run(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data_dir),
                    *([f"--waldir={waldir}"] if waldir is not None else []),
                    "-U",
                    superuser,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                    "--no-instructions",
                    *([] if sync else ["--no-sync"]),
                ],
                env=self.env(),
                what=f"initdb ({self.name}" + (f", log in {waldir})" if waldir is not None else ")"),
            )
        finally:
            pwfile.unlink(missing_ok=True)
        databases = [f"host all all {c} scram-sha-256\n" for c in clients]
        replicas = [f"host replication all {c} scram-sha-256\n" for c in clients] if replication else []
        (self.data_dir / "pg_hba.conf").write_text(
            "# written by caplab: TCP from its clients only, password always\n"
            + "".join(databases + replicas)
        )
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\ninclude_if_exists = 'caplab.conf'\n")

    def configure(self, settings: dict[str, str | int]) -> None:
        """(Re)writes ``caplab.conf``, this node's own settings (port, replication, sync), read
        after postgresql.conf; a running server needs ``reload`` (or a restart for some)."""
        every = {"port": self.port, "cluster_name": f"{CLUSTER_PREFIX}{self.name}", **settings}
        lines = [f"{k} = {_conf_value(v)}" for k, v in every.items()]
        path = self.data_dir / "caplab.conf"
        path.write_text("# written by caplab; rewritten on every role change\n" + "\n".join(lines) + "\n")
        self.user.own(path)

    def start(self, timeout_s: float = 120.0) -> None:
        """``pg_ctl start`` and wait until it accepts connections (a standby: until it is consistent)."""
        self.log_file.touch(exist_ok=True)
        self.user.own(self.log_file)
        self.user.run(
            [
                str(self.bin / "pg_ctl"),
                "start",
                "-w",
                "-t",
                str(int(timeout_s)),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
            ],
            env=self.env(),
            what=f"starting {self.name} on port {self.port} (its log: {self.log_file})",
        )

    def stop(self, mode: str = "fast", timeout_s: float = 60.0) -> None:
        """``pg_ctl stop -m MODE``; nothing to do when it is not running."""
        if self.postmaster_pid() is None:
            return
        self.user.run(
            [
                str(self.bin / "pg_ctl"),
                "stop",
                "-w",
                "-t",
                str(int(timeout_s)),
                "-m",
                mode,
                "-D",
                str(self.data_dir),
            ],
            env=self.env(),
            what=f"stopping {self.name}",
        )

    def kill(self) -> int | None:
        """SIGKILLs the postmaster (no shutdown, as in a crash); returns the pid killed. Its
        children notice and exit on their own: ``wait_gone`` waits for that."""
        pid = self.postmaster_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        return pid

    def kill_all(self, tree: Sequence[int] | None = None) -> int | None:
        """SIGKILLs the postmaster and every process it started (``tree``, when listed before),
        at once, as a machine that loses power: no backend outlives it to finish a commit its
        clients were waiting for (after ``kill`` alone a busy backend can). Returns the
        postmaster's pid."""
        pids = list(tree) if tree is not None else process_tree(self.postmaster_pid())
        for each in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        return pids[0] if pids else None

    def processes(self) -> list[psutil.Process]:
        """Every live process of this server, postmaster or child, found by their working
        directory (every PostgreSQL process works in its data directory)."""
        found = []
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if p.status() != psutil.STATUS_ZOMBIE and p.cwd() == str(self.data_dir):
                    found.append(p)
        return found

    def wait_gone(self, timeout_s: float = 30.0) -> None:
        """Until no process of this server is left (after a kill, a backend that lingers would
        hold its shared memory and stop a restart); SIGKILLs what remains after ``timeout_s``."""
        procs = self.processes()
        pid = self._pid_in_file()
        if pid is not None and pid not in {p.pid for p in procs}:
            # a killed postmaster stays a zombie until init reaps it, and PostgreSQL (kill(pid, 0))
            # takes that for a live postmaster owning the directory
            with contextlib.suppress(psutil.Error):
                procs.append(psutil.Process(pid))
        _, alive = psutil.wait_procs(procs, timeout=timeout_s)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()

    def promote(self, timeout_s: float = 60.0) -> None:
        """``pg_ctl promote -w``: the standby ends recovery and accepts writes."""
        self.user.run(
            [str(self.bin / "pg_ctl"), "promote", "-w", "-t", str(int(timeout_s)), "-D", str(self.data_dir)],
            env=self.env(),
            what=f"promoting {self.name}",
        )

    def postmaster_pid(self) -> int | None:
        """The live postmaster's pid (from ``postmaster.pid``), or None when it is not running."""
        pid = self._pid_in_file()
        if pid is None:
            return None
        try:
            proc = psutil.Process(pid)
            alive = proc.status() != psutil.STATUS_ZOMBIE and "postgres" in proc.name()
        except psutil.Error:
            return None
        return pid if alive else None

    def _pid_in_file(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def control_data(self) -> dict[str, str]:
        """``pg_controldata``'s fields (timeline, last checkpoint…), read from the data directory."""
        out = self.user.run([str(self.bin / "pg_controldata"), str(self.data_dir)], env=self.env())
        fields = (line.partition(":") for line in out.splitlines())
        return {name.strip(): value.strip() for name, _, value in fields}

    def pids(self) -> list[int]:
        """The postmaster and every process it started (backends, walsender, checkpointer…)."""
        return process_tree(self.postmaster_pid())

    def remove(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.log_file.unlink(missing_ok=True)


CLUSTER_PREFIX = "caplab-"
"""``cluster_name`` is ``caplab-NAME``: every process of the server carries it in its title."""


def _conf_value(value: str | int) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"
