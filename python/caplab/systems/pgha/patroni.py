"""One node: a Patroni daemon (Debian's, run by the system Python) managing one PostgreSQL data
directory, with its configuration file (JSON, which is YAML too) and its REST API on loopback (or,
with a namespace of its own, on the node's address there)."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caplab.systems.pgha.daemon import Daemon
from caplab.systems.pgha.netns import NodeNet
from caplab.systems.pgpair.server import Server, ServerUser

PATRONI = "/usr/bin/patroni"
HTTP_TIMEOUT_S = 2.0
SUPERUSER = "caplab"
REPLICATOR = "replicator"
PRIMARY = ("master", "primary")
"""Patroni's words for a PostgreSQL out of recovery (3.0 says master)."""


@dataclass(frozen=True)
class RestAnswer:
    """What a REST endpoint said: its status (0: nothing answered) and its JSON body."""

    status: int
    body: Any


@dataclass(frozen=True)
class Node:
    """``nodeI`` in ``directory``: ``nodeI/`` (the data directory), ``nodeI.yml``, ``nodeI.log``
    (Patroni's), ``nodeI.pid``; PostgreSQL on ``port``, the REST API on ``rest_port``, both on
    127.0.0.1 or, with ``net``, on the node's address in its namespace."""

    name: str
    directory: Path
    port: int
    rest_port: int
    user: ServerUser
    bin: Path
    net: NodeNet | None = None

    @property
    def host(self) -> str:
        """Where the node's PostgreSQL and REST API listen."""
        return self.net.address if self.net is not None else "127.0.0.1"

    @property
    def config_file(self) -> Path:
        return self.directory / f"{self.name}.yml"

    @property
    def daemon(self) -> Daemon:
        return Daemon(
            f"Patroni of {self.name}",
            self.directory / f"{self.name}.pid",
            self.directory / f"{self.name}.log",
            str(self.config_file),
        )

    @property
    def server(self) -> Server:
        """The PostgreSQL server Patroni runs (pgpair's view of one: pids, kill, wait_gone)."""
        return Server(self.name, self.directory / self.name, self.port, self.user, self.bin, self.host)

    @property
    def socket_dir(self) -> Path:
        """Where PostgreSQL's Unix socket is: reachable from this side of any partition."""
        return self.directory

    @property
    def rest_url(self) -> str:
        return f"http://{self.host}:{self.rest_port}"

    def write_config(self, scope: str, etcd_url: str, password: str, bootstrap: dict[str, Any]) -> None:
        """The node's Patroni configuration, mode 0600 (it holds the password)."""
        credentials = {"username": SUPERUSER, "password": password}
        clients = "127.0.0.1/32" if self.net is None else self.net.subnet
        config = {
            "scope": scope,
            "name": self.name,
            "log": {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
            "restapi": {
                "listen": f"{self.host}:{self.rest_port}",
                "connect_address": f"{self.host}:{self.rest_port}",
            },
            # use_proxies: no discovery of etcd's members, whose advertised address (loopback) a
            # node in a namespace cannot reach: it talks to the host it was given, only
            "etcd3": {"hosts": [etcd_url.removeprefix("http://")], "protocol": "http", "use_proxies": True},
            "bootstrap": bootstrap,
            "postgresql": {
                "listen": f"{self.host}:{self.port}",
                "connect_address": f"{self.host}:{self.port}",
                "data_dir": str(self.server.data_dir),
                "bin_dir": str(self.bin),
                "pgpass": str(self.directory / f".{self.name}.pgpass"),
                "authentication": {
                    "superuser": credentials,
                    "replication": {"username": REPLICATOR, "password": password},
                    "rewind": credentials,
                },
                "parameters": {"unix_socket_directories": str(self.directory)},
                # a clone waits for the leader's checkpoint: a spread one takes minutes
                "basebackup": [{"checkpoint": "fast"}, "no-sync"],
                "pg_hba": [
                    "local all all scram-sha-256",  # a client on the node's side of a partition
                    f"host all all {clients} scram-sha-256",
                    f"host replication all {clients} scram-sha-256",
                ],
            },
        }
        path = self.config_file
        path.touch(mode=0o600)
        os.chmod(path, 0o600)
        path.write_text(json.dumps(config, indent=2) + "\n")
        self.user.own(path)

    def start(self, env: dict[str, str]) -> int:
        """Starts this node's Patroni (which starts, bootstraps or clones PostgreSQL), inside the
        node's namespace when it has one."""
        if self.net is None:
            return self.daemon.spawn([PATRONI, str(self.config_file)], self.user, env)
        enter = self.net.enter(self.user.uid, self.user.gid)
        return self.daemon.spawn([*enter, PATRONI, str(self.config_file)], self.user, env, switch=False)

    def patroni_pid(self) -> int | None:
        return self.daemon.pid()

    def kill(self) -> tuple[int | None, int | None, float]:
        """SIGKILLs Patroni and PostgreSQL's every process (a crash of the whole node: nobody
        restarts PostgreSQL, and no backend lingers to commit); returns both pids and the instant
        of the kill (epoch seconds). The processes are listed first: on a busy host with hundreds
        of backends that takes a while, and the node serves until the signals go out together."""
        tree = self.server.pids()
        at = time.time()
        patroni = self.daemon.signal(signal.SIGKILL)
        postmaster = self.server.kill_all(tree)
        return patroni, postmaster, at

    def rest(
        self,
        path: str,
        method: str = "GET",
        body: dict[str, Any] | None = None,
        timeout_s: float = HTTP_TIMEOUT_S,
    ) -> RestAnswer:
        """Calls the REST API; status 0 when nothing answers within ``timeout_s``."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.rest_url}{path}", data=data, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as answer:
                return RestAnswer(answer.status, _json(answer.read()))
        except urllib.error.HTTPError as e:
            return RestAnswer(e.code, _json(e.read()))
        except OSError:
            return RestAnswer(0, None)

    def writable(self) -> bool:
        """Patroni holds the leader key for this node (``/primary``: 200; it says so before the
        promotion is over) and its PostgreSQL is out of recovery (``/patroni``'s role)."""
        answer = self.rest("/primary")
        return answer.status == 200 and isinstance(answer.body, dict) and answer.body.get("role") in PRIMARY


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
