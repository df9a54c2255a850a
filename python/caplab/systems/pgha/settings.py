"""What a pgha cluster is built with: its size, the Patroni settings that decide how long a
failover takes (``ttl``, ``loop_wait``, ``retry_timeout``, synchronous mode), its databases and
its loopback ports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caplab.systems.pgpair import seed
from caplab.systems.pgpair.server import ServerError

PG_PORT = 7610
"""node0's PostgreSQL port by default (node i: + i); pgpair's are 7600 and 7601."""
REST_PORT = 7620
"""node0's Patroni REST API port by default (node i: + i)."""
ETCD_PORT = 7630
"""etcd's client port by default (its peer port: + 1)."""


class HaError(ServerError):
    """The cluster cannot do what was asked; the message says why and what to do."""


@dataclass(frozen=True)
class HaSettings:
    """How to build a cluster (``start``'s options)."""

    data_dir: Path
    nodes: int = 2
    databases: int = 0
    scale: int = 1
    ttl: int = 30
    """Seconds the leader key lives without renewal: the longest a dead leader goes unnoticed."""
    loop_wait: int = 10
    """Seconds between the runs of each Patroni's HA loop."""
    retry_timeout: int = 10
    """Seconds Patroni retries etcd and PostgreSQL before it demotes itself."""
    sync: bool = False
    """Patroni's synchronous_mode: a replica confirms every commit, only it may be promoted."""
    pg_port: int = PG_PORT
    rest_port: int = REST_PORT
    etcd_port: int = ETCD_PORT
    """0 for any of the ports: free ports chosen at build time."""
    max_connections: int = 200
    netns: str | None = None
    """Each node in a network namespace of its own on this /24 (``auto``: a free one of
    10.204.0.0/16), so that ``isolate`` can partition it; None: every node on 127.0.0.1."""

    def check(self) -> None:
        if not 1 <= self.nodes <= 9:
            raise HaError(f"--nodes must be 1…9, got {self.nodes}")
        seed.check(self.databases, self.scale, HaError)
        # Patroni's own rule: a leader must get through a loop and its retries within ttl.
        if self.loop_wait < 1 or self.retry_timeout < 1 or self.ttl < self.loop_wait + 2 * self.retry_timeout:
            raise HaError(
                f"need ttl ≥ loop_wait + 2 × retry_timeout, each ≥ 1 s (got ttl {self.ttl}, "
                f"loop_wait {self.loop_wait}, retry_timeout {self.retry_timeout})"
            )
        for name, port in (
            ("--port", self.pg_port),
            ("--rest-port", self.rest_port),
            ("--etcd-port", self.etcd_port),
        ):
            if not (port == 0 or 1024 <= port <= 65535 - self.nodes):
                raise HaError(f"{name} must be 1024…{65535 - self.nodes} (0: free ports), got {port}")
        if not 10 <= self.max_connections <= 10000:
            raise HaError(f"--max-connections must be 10…10000, got {self.max_connections}")
