"""The cluster: etcd and N Patroni nodes (``node0`` …) in one directory of its own.

What the cluster is lives in ``pgha.json`` (ports, Patroni settings, databases), so every command
works from any process; who leads is never stored but asked of Patroni. The password is in the
cluster's libpq ``pgpass`` file (``PGPASSFILE=DIR/pgpass``), never on a command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from caplab.systems.pgha.etcd import Etcd
from caplab.systems.pgha.members import Members
from caplab.systems.pgha.netns import NodeNet, choose_subnet
from caplab.systems.pgha.patroni import SUPERUSER, Node
from caplab.systems.pgha.settings import HaError, HaSettings
from caplab.systems.pgpair import seed
from caplab.systems.pgpair.server import (
    ServerError,
    ServerUser,
    bin_dir,
    find_password,
    free_port,
    new_data_dir,
    write_passfile,
)

STATE_FILE = "pgha.json"
PASSFILE = "pgpass"
PASSWORD_ENV = "PGHA_PASSWORD"
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class HaState:
    """What ``pgha.json`` holds: enough to find and drive the cluster from any process."""

    scope: str
    pg_ports: tuple[int, ...]
    rest_ports: tuple[int, ...]
    etcd_port: int
    ttl: int
    loop_wait: int
    retry_timeout: int
    sync: bool
    databases: int
    scale: int
    max_connections: int
    server_user: str
    bin: str
    running: bool = True
    subnet: str | None = None
    """The /24 of the nodes' namespaces, or None: every node on 127.0.0.1."""


class Cluster:
    """A built cluster on disk, running or not: ``Cluster.create`` builds one, ``open`` finds one."""

    def __init__(self, data_dir: Path, state: HaState, password: str) -> None:
        self.data_dir = data_dir
        self.state = state
        self.password = password
        self.user = ServerUser.for_servers(state.server_user)
        subnet = state.subnet
        count = len(state.pg_ports)
        self.nets = tuple(NodeNet(state.scope, i, subnet) for i in range(count)) if subnet else ()
        self.etcd = Etcd(data_dir, state.etcd_port, tuple(n.host_address for n in self.nets))
        self.nodes = tuple(
            Node(f"node{i}", data_dir, pg, rest, self.user, Path(state.bin), self.nets[i] if subnet else None)
            for i, (pg, rest) in enumerate(zip(state.pg_ports, state.rest_ports, strict=True))
        )

    # --- building and finding ------------------------------------------------------------------

    @classmethod
    def create(cls, settings: HaSettings, password: str | None = None, jobs: int = 0) -> Cluster:
        """etcd, then node0 (Patroni bootstraps it and takes the leader key), its databases, then
        the other nodes (Patroni clones them). Whatever was started is stopped and removed again
        if a step fails."""
        settings.check()
        data_dir = settings.data_dir.resolve()
        if (data_dir / STATE_FILE).exists():
            raise HaError(f"{data_dir} already holds a cluster: `stop` it, or `start` it again")
        user = new_data_dir(data_dir, HaError)
        user.own(data_dir)
        cluster = cls(data_dir, _state(settings, user), password or secrets.token_urlsafe(24))
        # in namespaces the nodes have addresses of their own: the file serves every host
        hosts = "*" if cluster.nets else "127.0.0.1"
        write_passfile(cluster.passfile, user, SUPERUSER, cluster.password, hosts)
        cluster.save()
        try:
            cluster._build(jobs)
        except BaseException:
            try:
                cluster.stop()
            finally:
                cluster.remove()  # a half-built cluster is of no use, and would be resumed by mistake
            raise
        return cluster

    def _build(self, jobs: int) -> None:
        env = self.env()
        self._create_nets()
        self.etcd.start(self.user, env)
        for node in self.nodes:
            node.write_config(self.state.scope, self.etcd_url(node), self.password, self._bootstrap())
        first = self.nodes[0]
        first.start(env)
        self.members().wait_leader(READY_TIMEOUT_S)
        if self.state.databases:
            seed.seed(first.server, SUPERUSER, self.passfile, self.state.databases, self.state.scale, jobs)
        for node in self.nodes[1:]:
            node.start(env)
        self.members().wait_healthy(READY_TIMEOUT_S, sync=self.state.sync)

    def _bootstrap(self) -> dict[str, Any]:
        """Patroni's ``bootstrap`` section: the DCS settings every node shares, and initdb's."""
        s = self.state
        parameters = {
            "max_connections": s.max_connections,
            "wal_level": "replica",
            "hot_standby": "on",
            "wal_log_hints": "on",
            "max_wal_senders": 10,
            "max_replication_slots": 10,
            "wal_keep_size": "512MB",
            # see pgpair.pair: PostgreSQL 15 acts on a promote request only after this wait
            "wal_retrieve_retry_interval": "100ms",
            "recovery_init_sync_method": "syncfs",
            "logging_collector": "on",
        }
        return {
            "dcs": {
                "ttl": s.ttl,
                "loop_wait": s.loop_wait,
                "retry_timeout": s.retry_timeout,
                "maximum_lag_on_failover": 1048576,
                "synchronous_mode": s.sync,
                "postgresql": {"use_pg_rewind": True, "use_slots": True, "parameters": parameters},
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, {"auth": "scram-sha-256"}],
        }

    @classmethod
    def open(cls, data_dir: Path, password: str | None = None) -> Cluster:
        """The cluster in ``data_dir``; the password from ``password``, ``$PGHA_PASSWORD`` or the
        cluster's pgpass file, in that order."""
        data_dir = data_dir.resolve()
        try:
            raw = json.loads((data_dir / STATE_FILE).read_text())
        except FileNotFoundError:
            raise HaError(f"no cluster in {data_dir} (no {STATE_FILE}): `start --data-dir` one") from None
        raw["pg_ports"] = tuple(raw["pg_ports"])
        raw["rest_ports"] = tuple(raw["rest_ports"])
        given = find_password(password, PASSWORD_ENV, data_dir / PASSFILE, HaError)
        return cls(data_dir, HaState(**raw), given)

    def save(self) -> None:
        (self.data_dir / STATE_FILE).write_text(json.dumps(asdict(self.state), indent=2) + "\n")

    def mark(self, running: bool) -> None:
        """Records whether the cluster is meant to run (a foreground ``start`` exits once not)."""
        self.state = replace(self.state, running=running)
        if self.data_dir.exists():  # not when `stop --remove` from elsewhere took it first
            self.save()

    @property
    def passfile(self) -> Path:
        return self.data_dir / PASSFILE

    def env(self) -> dict[str, str]:
        """The daemons' environment: C locale, no PG* variables of ours."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "PATRONI"))}
        env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", HOME=str(self.data_dir))
        return env

    # --- looking -------------------------------------------------------------------------------

    def members(self) -> Members:
        return Members(self.nodes)

    def node(self, name: str) -> Node:
        found = next((n for n in self.nodes if n.name == name), None)
        if found is None:
            raise HaError(f"no node {name!r} (the cluster has {', '.join(n.name for n in self.nodes)})")
        return found

    def database_names(self) -> list[str]:
        return seed.names(self.state.databases)

    def etcd_url(self, node: Node) -> str:
        """Where ``node`` reaches etcd: loopback, or the host's end of its veth."""
        return f"http://{node.net.host_address}:{self.etcd.port}" if node.net else self.etcd.url

    def url(self, database: str = "postgres") -> str:
        """A libpq URL naming every node, read-write: whichever leads (no password in it)."""
        hosts = ",".join(f"{n.host}:{n.port}" for n in self.nodes)
        return f"postgresql://{SUPERUSER}@{hosts}/{database}?target_session_attrs=read-write"

    def status(self) -> dict[str, Any]:
        """What ``status`` prints: leader, members (role, state, timeline, lag), pids, settings."""
        view = self.members().cluster()
        leader = next((m["name"] for m in view.get("members", []) if m.get("role") == "leader"), None)
        s = self.state
        return {
            "leader": leader,
            "members": view.get("members", []),
            "timeline": next(
                (m.get("timeline") for m in view.get("members", []) if m["name"] == leader), None
            ),
            "roles": self.role_pids(leader),
            "nodes": [
                {
                    "name": n.name,
                    "host": n.host,
                    "port": n.port,
                    "rest": n.rest_url,
                    "patroni_pid": n.patroni_pid(),
                    "postmaster_pid": n.server.postmaster_pid(),
                    "log": str(n.daemon.log_file),
                    **({"namespace": n.net.namespace, "isolated": n.net.isolated()} if n.net else {}),
                }
                for n in self.nodes
            ],
            "etcd": {"url": self.etcd.url, "pid": self.etcd.daemon.pid()},
            "patroni": {
                "ttl": s.ttl,
                "loop_wait": s.loop_wait,
                "retry_timeout": s.retry_timeout,
                "sync": s.sync,
            },
            "databases": {"count": s.databases, "names": seed.PATTERN, "scale": s.scale},
            "user": SUPERUSER,
            "passfile": str(self.passfile),
            "url": self.url(),
        }

    def role_pids(self, leader: str | None = None) -> dict[str, list[int]]:
        """``primary`` and ``standby`` → the postmasters (and their children) of the leader and
        of the other nodes, for attributing resources by role."""
        leader = leader if leader is not None else self.members().leader_name()
        found: dict[str, list[int]] = {"primary": [], "standby": []}
        for n in self.nodes:
            found["primary" if n.name == leader else "standby"].extend(n.server.pids())
        return found

    # --- running and stopping --------------------------------------------------------------------

    def resume(self) -> None:
        """Starts a stopped cluster again: etcd, then every node (Patroni elects a leader)."""
        env = self.env()
        self._create_nets()
        if self.etcd.daemon.pid() is None:
            self.etcd.start(self.user, env)
        for node in self.nodes:
            if node.patroni_pid() is None:
                node.start(env)
        self.members().wait_healthy(READY_TIMEOUT_S, sync=self.state.sync)
        self.mark(True)

    def stop(self) -> None:
        """Stops the replicas' Patroni (each stops its PostgreSQL), then the leader's — so no
        failover starts — then etcd; whatever outlives that is killed."""
        self.mark(False)
        try:
            leader = self.members().leader_name()
            replicas = [n for n in self.nodes if n.name != leader]
            for group in (replicas, [n for n in self.nodes if n.name == leader]):
                for node in group:  # all at once: each Patroni takes seconds to stop
                    node.daemon.signal(signal.SIGTERM)
                for node in group:
                    node.daemon.stop(STOP_TIMEOUT_S)
                    node.server.kill()
                    node.server.wait_gone()
            self.etcd.stop()
        finally:
            self._remove_nets()  # whatever failed above: a namespace kills what is left in it

    def _create_nets(self) -> None:
        """The nodes' namespaces (those missing: a stopped cluster has none)."""
        try:
            for net in self.nets:
                if not net.exists():
                    net.create()
        except BaseException:
            self._remove_nets()
            raise

    def _remove_nets(self) -> None:
        for net in self.nets:
            net.remove()

    def remove(self) -> None:
        """Deletes the cluster's directory (after ``stop``)."""
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _state(settings: HaSettings, user: ServerUser) -> HaState:
    n = settings.nodes

    def ports(first: int) -> tuple[int, ...]:
        return tuple(first + i for i in range(n)) if first else tuple(free_port() for _ in range(n))

    return HaState(
        scope=f"caplab-{secrets.token_hex(4)}",
        pg_ports=ports(settings.pg_port),
        rest_ports=ports(settings.rest_port),
        etcd_port=settings.etcd_port or _free_pair(),
        ttl=settings.ttl,
        loop_wait=settings.loop_wait,
        retry_timeout=settings.retry_timeout,
        sync=settings.sync,
        databases=settings.databases,
        scale=settings.scale,
        max_connections=settings.max_connections,
        server_user=user.name,
        bin=str(bin_dir()),
        subnet=choose_subnet(settings.netns) if settings.netns else None,
    )


def _free_pair() -> int:
    """A free port whose successor looks free too (etcd's client and peer ports)."""
    for _ in range(20):
        port = free_port()
        with contextlib.suppress(OSError), socket.socket() as s:
            s.bind(("127.0.0.1", port + 1))
            return port
    raise ServerError("no two adjacent free loopback ports for etcd")
