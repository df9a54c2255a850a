"""The pair: two nodes, ``node0`` and ``node1``, one the primary and the other a hot standby
streaming from it through a replication slot named after the standby.

What the pair is lives in ``pgpair.json`` in its data directory (ports, sync mode, databases), so
every command (``status``, ``switchover``…) works from any process; which node is primary is never
stored but asked of the nodes. Node settings are in each node's ``caplab.conf``, rewritten on every
role change: ``primary_conninfo`` always points at the other node (a primary ignores it).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from caplab.systems.pgpair import nodes, seed
from caplab.systems.pgpair.nodes import Role
from caplab.systems.pgpair.server import (
    Server,
    ServerError,
    ServerUser,
    bin_dir,
    find_password,
    free_port,
    new_data_dir,
    write_passfile,
)

SyncMode = Literal["on", "remote_apply", "off"]
SYNC_MODES: tuple[SyncMode, ...] = ("on", "remote_apply", "off")
STATE_FILE = "pgpair.json"
ROLE_PIDFILES = ("primary.pid", "standby.pid")
"""Links to the postmaster.pid of the node in each role now (`Pair.mark_roles`)."""
PASSFILE = "pgpass"
PASSWORD_ENV = "PGPAIR_PASSWORD"
SUPERUSER = "caplab"
NODE_NAMES = ("node0", "node1")
STREAM_TIMEOUT_S = 120.0


class PairError(ServerError):
    """The pair cannot do what was asked; the message says why and what to do."""


@dataclass(frozen=True)
class PairSettings:
    """How to build a pair (``start``'s options)."""

    data_dir: Path
    databases: int = 0
    scale: int = 1
    sync: SyncMode = "off"
    port: int = 0
    """The first node's port (the second gets port + 1); 0: any free ports."""
    jobs: int = 0
    """Databases seeded at once (0: twice the cores)."""
    max_connections: int = 200

    def check(self) -> None:
        if self.sync not in SYNC_MODES:
            raise PairError(f"--sync must be one of {', '.join(SYNC_MODES)}, got {self.sync!r}")
        seed.check(self.databases, self.scale, PairError)
        if not (self.port == 0 or 1024 <= self.port <= 65534):
            raise PairError(f"--port must be 1024…65534 (0: any free ports), got {self.port}")
        if not 10 <= self.max_connections <= 10000:
            raise PairError(f"--max-connections must be 10…10000, got {self.max_connections}")


@dataclass(frozen=True)
class PairState:
    """What ``pgpair.json`` holds: enough to find and drive the pair from any process."""

    ports: tuple[int, int]
    sync: SyncMode
    databases: int
    scale: int
    max_connections: int
    server_user: str
    bin: str
    superuser: str = SUPERUSER
    running: bool = True


class Pair:
    """A built pair on disk, running or not. ``Pair.create`` builds one, ``Pair.open`` finds one."""

    def __init__(self, data_dir: Path, state: PairState, password: str) -> None:
        self.data_dir = data_dir
        self.state = state
        self.password = password
        user = ServerUser.for_servers(state.server_user)
        self.nodes = tuple(
            Server(name, data_dir / name, port, user, Path(state.bin))
            for name, port in zip(NODE_NAMES, state.ports, strict=True)
        )

    # --- building and finding ------------------------------------------------------------------

    @classmethod
    def create(cls, settings: PairSettings, password: str | None = None) -> Pair:
        """initdb node0, seed its databases, base-backup node1 from it, start both. Whatever was
        started is stopped again if a later step fails."""
        settings.check()
        data_dir = settings.data_dir.resolve()
        if (data_dir / STATE_FILE).exists():
            raise PairError(f"{data_dir} already holds a pair: `stop` it, or start it again with resume")
        user = new_data_dir(data_dir, PairError)
        ports = (settings.port, settings.port + 1) if settings.port else (free_port(), free_port())
        state = PairState(
            ports=ports,
            sync=settings.sync,
            databases=settings.databases,
            scale=settings.scale,
            max_connections=settings.max_connections,
            server_user=user.name,
            bin=str(bin_dir()),
        )
        pair = cls(data_dir, state, password or secrets.token_urlsafe(24))
        write_passfile(pair.passfile, user, SUPERUSER, pair.password)
        pair.save()
        try:
            pair._build(settings.jobs)
        except BaseException:
            with contextlib.suppress(ServerError):
                pair.stop()
            pair.remove()  # a half-built pair is of no use, and would be resumed by mistake
            raise
        return pair

    def _build(self, jobs: int) -> None:
        first, second = self.nodes
        first.initdb(SUPERUSER, self.password)
        first.configure(self.settings_for(first))
        first.start()
        if self.state.databases:
            seed.seed(first, SUPERUSER, self.passfile, self.state.databases, self.state.scale, jobs)
        self.attach_standby(second, first)
        self.set_sync(first, True)
        self.mark_roles(first)

    def attach_standby(self, standby: Server, primary: Server) -> None:
        """A fresh standby: base backup of ``primary`` with a slot of its own, then start it."""
        nodes.ensure_slot(primary, standby.name, SUPERUSER, self.password)
        standby.remove()
        standby.data_dir.mkdir(mode=0o700)
        standby.user.own(standby.data_dir)
        standby.user.run(
            [
                str(standby.bin / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                SUPERUSER,
                "-D",
                str(standby.data_dir),
                "-X",
                "stream",
                "-S",
                standby.name,
                "-c",
                "fast",
                "-w",
                "--no-sync",  # the standby's first start syncs the directory (syncfs)
            ],
            env=standby.env(self.passfile),
            what=f"base backup of {primary.name} for {standby.name}",
        )
        self.make_standby(standby, primary)
        standby.start()
        nodes.wait_streaming(primary, standby, SUPERUSER, self.password, STREAM_TIMEOUT_S)

    def make_standby(self, node: Server, primary: Server) -> None:
        """Stopped ``node`` will start as a standby of ``primary``."""
        node.configure(self.settings_for(node))
        signal_file = node.data_dir / "standby.signal"
        signal_file.touch()
        node.user.own(signal_file)

    @classmethod
    def open(cls, data_dir: Path, password: str | None = None) -> Pair:
        """The pair in ``data_dir``; the password from ``password``, ``$PGPAIR_PASSWORD`` or the
        pair's pgpass file, in that order."""
        data_dir = data_dir.resolve()
        try:
            raw = json.loads((data_dir / STATE_FILE).read_text())
        except FileNotFoundError:
            raise PairError(
                f"no pair in {data_dir} (no {STATE_FILE}): start one with `start --data-dir`"
            ) from None
        raw["ports"] = tuple(raw["ports"])
        state = PairState(**raw)
        return cls(data_dir, state, find_password(password, PASSWORD_ENV, data_dir / PASSFILE, PairError))

    def save(self) -> None:
        (self.data_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2) + "\n")

    def mark(self, running: bool) -> None:
        """Records whether the pair is meant to run (a foreground ``start`` exits once it is not)."""
        self.state = PairState(**{**asdict(self.state), "ports": self.state.ports, "running": running})
        self.save()

    @property
    def passfile(self) -> Path:
        return self.data_dir / PASSFILE

    def settings_for(self, node: Server, *, sync_on: bool = False) -> dict[str, str | int]:
        """A node's caplab.conf. A new primary starts with no synchronous standby (its standby is
        not there yet, and commits would wait for it); ``set_sync`` turns it on once one streams."""
        other = self.other(node)
        sync = self.state.sync != "off" and sync_on
        return {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "",
            "max_connections": self.state.max_connections,
            "wal_level": "replica",
            "max_wal_senders": 10,
            "max_replication_slots": 10,
            "wal_keep_size": "512MB",
            "hot_standby": "on",
            "wal_log_hints": "on",
            "synchronous_standby_names": "*" if sync else "",
            "synchronous_commit": "remote_apply" if self.state.sync == "remote_apply" else "on",
            "primary_conninfo": (
                f"host=127.0.0.1 port={other.port} user={SUPERUSER} application_name={node.name} "
                f"passfile={self.passfile}"
            ),
            "primary_slot_name": node.name,
            "recovery_target_timeline": "latest",
            # a standby whose primary has just gone waits this long before it looks for WAL
            # again, and PostgreSQL 15 acts on a promote request only after that wait: at the
            # default 5 s, one switchover in a few took 5 s longer than its own work
            "wal_retrieve_retry_interval": "100ms",
            # a node's first start after a base backup or a crash syncs its whole data
            # directory: one syncfs per file system instead of an fsync per file
            "recovery_init_sync_method": "syncfs",
        }

    def set_sync(self, primary: Server, on: bool) -> None:
        """Turns synchronous replication on or off on the running primary (a reload, no restart)."""
        if self.state.sync == "off":
            return
        primary.configure(self.settings_for(primary, sync_on=on))
        with nodes.connect(primary, SUPERUSER, self.password) as conn:
            conn.execute("SELECT pg_reload_conf()")
        if on:  # the walsender takes the new setting a moment later
            deadline = time.monotonic() + STREAM_TIMEOUT_S
            while not any(
                r["sync_state"] == "sync" for r in nodes.replication(primary, SUPERUSER, self.password)
            ):
                if time.monotonic() > deadline:
                    raise PairError(
                        f"no standby became synchronous for {primary.name} (see {primary.log_file})"
                    )
                time.sleep(0.02)

    # --- looking -------------------------------------------------------------------------------

    def other(self, node: Server) -> Server:
        return self.nodes[1] if node is self.nodes[0] else self.nodes[0]

    def node(self, name: str) -> Server:
        found = next((n for n in self.nodes if n.name == name), None)
        if found is None:
            raise PairError(f"no node {name!r} (the pair has {', '.join(NODE_NAMES)})")
        return found

    def roles(self) -> dict[str, Role]:
        """Node name → what it is now (asked of each node)."""
        return {n.name: nodes.role_of(n, SUPERUSER, self.password) for n in self.nodes}

    def primary(self) -> Server | None:
        roles = self.roles()
        return next((n for n in self.nodes if roles[n.name] == "primary"), None)

    def standby(self) -> Server | None:
        roles = self.roles()
        return next((n for n in self.nodes if roles[n.name] == "standby"), None)

    def role_pids(self) -> dict[str, list[int]]:
        """``primary`` and ``standby`` → their postmaster and every process it started, for
        attributing resources by role (empty when the role has no node now)."""
        roles = self.roles()
        found: dict[str, list[int]] = {"primary": [], "standby": []}
        for n in self.nodes:
            if roles[n.name] in found:
                found[roles[n.name]] = n.pids()
        return found

    def mark_roles(self, primary: Server) -> None:
        """Points ``primary.pid`` and ``standby.pid`` in the pair's directory at the postmaster.pid
        of the node that is each now (symbolic links, replaced atomically): a study's roles name
        them as ``pidfile:``s and follow a switchover or a promotion. pg_ctl daemonises the servers,
        so they are never in the start command's process tree."""
        for name, node in zip(ROLE_PIDFILES, (primary, self.other(primary)), strict=True):
            link = self.data_dir / name
            fresh = self.data_dir / f".{name}.new"
            fresh.unlink(missing_ok=True)
            fresh.symlink_to(Path(node.name) / "postmaster.pid")
            os.replace(fresh, link)

    def database_names(self) -> list[str]:
        return seed.names(self.state.databases)

    def url(self, database: str = "postgres") -> str:
        """A libpq URL naming both nodes, read-write: whichever is primary (no password in it)."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"postgresql://{SUPERUSER}@{hosts}/{database}?target_session_attrs=read-write"

    def status(self) -> dict[str, Any]:
        """What ``status`` prints: roles, ports, pids, replication, and how to connect."""
        roles = self.roles()
        primary = next((n for n in self.nodes if roles[n.name] == "primary"), None)
        pids = {n.name: n.pids() for n in self.nodes}
        return {
            "primary": primary.name if primary else None,
            "roles": {
                role: next((pids[n.name] for n in self.nodes if roles[n.name] == role), [])
                for role in ("primary", "standby")
            },
            "nodes": [
                {
                    "name": n.name,
                    "role": roles[n.name],
                    "port": n.port,
                    "pid": n.postmaster_pid(),
                    "pids": pids[n.name],
                    "data_dir": str(n.data_dir),
                    "log": str(n.log_file),
                }
                for n in self.nodes
            ],
            "replication": nodes.replication(primary, SUPERUSER, self.password) if primary else [],
            "sync": self.state.sync,
            "databases": {"count": self.state.databases, "names": seed.PATTERN, "scale": self.state.scale},
            "user": SUPERUSER,
            "passfile": str(self.passfile),
            "url": self.url(),
        }

    # --- running and stopping --------------------------------------------------------------------

    def resume(self) -> None:
        """Starts a stopped pair in the roles it had: the primary first. After a kill-primary
        without rejoin neither node is a standby on disk; the one on the later timeline (the
        promoted one) is the primary, and the other must be rewound (``rejoin``) before it runs."""
        standbys = [n for n in self.nodes if (n.data_dir / "standby.signal").exists()]
        if not standbys:
            later = max(self.nodes, key=self._timeline)
            later.start()
            from caplab.systems.pgpair.failover import rejoin  # failover builds on this module

            rejoin(self, self.other(later))
        for n in sorted(self.nodes, key=lambda n: n in standbys):
            if n.postmaster_pid() is None:
                n.start()
        self.mark_roles(self.primary() or self.nodes[0])
        self.mark(True)

    @staticmethod
    def _timeline(node: Server) -> int:
        return int(node.control_data().get("Latest checkpoint's TimeLineID", "0") or 0)

    def stop(self) -> None:
        """Stops both nodes (fast: open transactions roll back), standby first."""
        self.mark(False)
        failures = []
        for n in reversed(self.nodes):
            try:
                n.stop()
            except ServerError as e:
                failures.append(str(e))
                n.kill()
        if failures:
            raise PairError("; ".join(failures))

    def remove(self) -> None:
        """Deletes the pair's files (after ``stop``)."""
        for n in self.nodes:
            n.remove()
        for name in (STATE_FILE, PASSFILE, *ROLE_PIDFILES):
            (self.data_dir / name).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.data_dir.rmdir()

    def wait_writable(self, node: Server, timeout_s: float = 60.0) -> float:
        """Seconds until ``node`` accepts writes."""
        started = time.monotonic()
        nodes.wait_writable(node, SUPERUSER, self.password, timeout_s)
        return time.monotonic() - started
