"""The cluster as Patroni sees it, through any member's REST API: who leads, who replicates
(and how far behind), and waiting until the cluster is whole."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from caplab.systems.pgha.patroni import Node
from caplab.systems.pgha.settings import HaError

POLL_S = 0.05


class Members:
    """The nodes' REST APIs, asked in turn until one answers."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)

    def cluster(self) -> dict[str, Any]:
        """Patroni's ``/cluster`` (members: name, role, state, timeline, lag); empty when no
        node answers."""
        for node in self.nodes:
            answer = node.rest("/cluster")
            if answer.status == 200 and isinstance(answer.body, dict):
                return answer.body
        return {}

    def leader_name(self) -> str | None:
        members = self.cluster().get("members", [])
        return next((m["name"] for m in members if m.get("role") == "leader"), None)

    def leader(self) -> Node | None:
        name = self.leader_name()
        return next((n for n in self.nodes if n.name == name), None)

    def writable(self) -> Node | None:
        """The node whose Patroni holds the leader key and runs a primary, or None."""
        return next((n for n in self.nodes if n.writable()), None)

    def streaming(self) -> dict[str, str]:
        """Replica name → its sync state (``async``/``sync``), for replicas streaming from the
        leader now (the leader's ``/patroni``)."""
        leader = self.leader()
        if leader is None:
            return {}
        answer = leader.rest("/patroni")
        rows = answer.body.get("replication", []) if isinstance(answer.body, dict) else []
        return {r["application_name"]: r.get("sync_state", "") for r in rows if r.get("state") == "streaming"}

    def wait_leader(self, timeout_s: float) -> Node:
        """Until some node is a writable leader."""
        deadline = time.monotonic() + timeout_s
        while (found := self.writable()) is None:
            if time.monotonic() > deadline:
                raise HaError(f"no node became a writable leader within {timeout_s:.0f} s{self._logs()}")
            time.sleep(POLL_S)
        return found

    def wait_healthy(self, timeout_s: float, sync: bool = False) -> None:
        """Until there is a writable leader and every other node streams from it (with ``sync``,
        one of them synchronously, and Patroni has recorded it as the sync standby: a switchover
        is refused until then)."""
        deadline = time.monotonic() + timeout_s
        while not self.healthy(sync):
            if time.monotonic() > deadline:
                raise HaError(
                    f"the cluster was not whole within {timeout_s:.0f} s: {self.cluster()}{self._logs()}"
                )
            time.sleep(POLL_S * 4)

    def healthy(self, sync: bool = False) -> bool:
        """A writable leader, every other node streaming from it (with ``sync``: one
        synchronously, and recorded so by Patroni)."""
        leader = self.writable()
        if leader is None:
            return False
        streaming = self.streaming()
        others = {n.name for n in self.nodes} - {leader.name}
        if not others <= set(streaming):
            return False
        return not sync or (
            "sync" in streaming.values()
            and any(m.get("role") == "sync_standby" for m in self.cluster().get("members", []))
        )

    def _logs(self) -> str:
        return " (see " + ", ".join(str(n.daemon.log_file) for n in self.nodes) + ")"
