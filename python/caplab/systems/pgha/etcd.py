"""The cluster's DCS: one etcd member on loopback, its data in the cluster's directory, and the
two things caplab asks of it over its v3 HTTP gateway: is it healthy, and who holds the leader key."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from caplab.systems.pgha.daemon import Daemon
from caplab.systems.pgha.settings import HaError
from caplab.systems.pgpair.server import ServerUser

ETCD = "/usr/bin/etcd"
HTTP_TIMEOUT_S = 1.0


class Etcd:
    """etcd in ``directory`` (``etcd/`` data, ``etcd.log``, ``etcd.pid``), serving ``port`` on
    loopback and on each of ``hosts`` (where nodes in namespaces reach it), and talking to itself
    on ``port + 1``."""

    def __init__(self, directory: Path, port: int, hosts: tuple[str, ...] = ()) -> None:
        self.data_dir = directory / "etcd"
        self.port = port
        self.hosts = hosts
        self.daemon = Daemon("etcd", directory / "etcd.pid", directory / "etcd.log", str(self.data_dir))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, user: ServerUser, env: dict[str, str], timeout_s: float = 30.0) -> None:
        """Starts etcd and waits until it answers healthy."""
        peer = f"http://127.0.0.1:{self.port + 1}"
        clients = ",".join([self.url, *(f"http://{h}:{self.port}" for h in self.hosts)])
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        user.own(self.data_dir)
        self.daemon.spawn(
            [
                ETCD,
                "--name=caplab",
                f"--data-dir={self.data_dir}",
                f"--listen-client-urls={clients}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=caplab={peer}",
                "--initial-cluster-state=new",
                "--log-level=warn",
            ],
            user,
            env,
        )
        deadline = time.monotonic() + timeout_s
        while not self.healthy():
            if self.daemon.pid() is None or time.monotonic() > deadline:
                raise HaError(f"etcd did not become healthy on {self.url} (see {self.daemon.log_file})")
            time.sleep(0.05)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=HTTP_TIMEOUT_S) as answer:
                return bool(json.load(answer).get("health") == "true")
        except (OSError, ValueError):
            return False

    def get(self, key: str) -> str | None:
        """The value of ``key`` (None: no such key); HaError when etcd does not answer."""
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        request = urllib.request.Request(f"{self.url}/v3/kv/range", data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
                found: dict[str, Any] = json.load(answer)
        except (OSError, ValueError) as e:
            raise HaError(f"etcd on {self.url} did not answer: {e}") from None
        kvs = found.get("kvs") or []
        return base64.b64decode(kvs[0].get("value", "")).decode() if kvs else None

    def stop(self) -> None:
        self.daemon.stop(timeout_s=10.0)
