"""A partition of pgha's leader, each node in a network namespace of its own: the isolated leader
stops taking writes within Patroni's promise (demoted before its key expires, nothing acknowledged
there once another node leads), the majority side is writable again, and after healing the old
leader rejoins. Under synchronous mode nothing acknowledged on either side is lost; asynchronously
the isolated side's writes before its demotion are lost, and counted.

The isolated side's figures come from the action itself (a writer on the leader's Unix socket);
the test checks them against what it can see for itself: its own client on the majority side,
the rows in the new leader, and the namespaces gone after the cluster is removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest

from caplab.systems.pgha import HaError, partition
from caplab.systems.pgha.netns import NETNS_DIR, choose_subnet
from support.foreground import read_started
from support.pgha import StartCluster, Writer, held_ids, require_patroni
from support.require import PROFILES, require

pytestmark = pytest.mark.slow  # a real cluster built and partitioned per test

MARGIN_S = 3.0
QUICK = {"ttl": 6, "loop_wait": 1, "retry_timeout": 2}
"""Patroni's settings cut short (its rule: ttl ≥ loop_wait + 2 × retry_timeout) for short cuts."""
CUT_S = 9.0
"""Longer than ttl + loop_wait (7 s): the majority side elects a leader while the cut lasts."""


@pytest.fixture(autouse=True)
def _can_partition() -> None:
    require_patroni()
    require(PROFILES, [] if os.geteuid() == 0 else "network namespaces need root")


def _isolated_rows(conninfo: str) -> int:
    """Rows of the isolated side's ledger the cluster holds now, counted by the test."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(f"SELECT count(*) FROM {partition.TABLE}").fetchone()
    return int(row[0]) if row else 0


def _agrees(side: dict[str, object], held: int) -> bool:
    """The rows held are those acknowledged less those lost (plus at most one committed whose
    acknowledgement the cut swallowed)."""
    kept = int(str(side["acknowledged"])) - int(str(side["lost"]))
    return kept <= held <= kept + 1


def test_an_isolated_leader_under_synchronous_mode_loses_nothing(start_cluster: StartCluster) -> None:
    cluster = start_cluster(nodes=2, sync=True, netns="auto", **QUICK)
    namespaces = [n.net.namespace for n in cluster.nodes if n.net is not None]
    assert len(namespaces) == 2 and all((NETNS_DIR / ns).exists() for ns in namespaces)
    old = cluster.status()["leader"]
    with Writer(cluster) as writer:
        while len(writer.acked) < 20:
            time.sleep(0.05)
        result = partition.isolate(cluster, CUT_S)
        new = cluster.node(result["new_primary"])
        at = result["phases"]["at"]
        majority_first = writer.wait_acked_after(at["fault"], new.port, 30.0)
    s = cluster.state
    side = result["isolated_side"]
    assert result["old_primary"] == old and new.name != old
    # the majority side: Patroni's phases in order, writable within ttl + loop_wait, and our own
    # client's first write there agrees
    after = result["phases"]["after_fault_s"]
    assert after["detected"] <= after["elected"] <= after["writable"] <= s.ttl + s.loop_wait + MARGIN_S
    assert majority_first - at["fault"] >= after["elected"] - 0.5, (majority_first - at["fault"], after)
    # the isolated side: demoted before its key expired, nothing taken while another node led
    assert side["demoted_after_s"] is not None and side["demoted_after_s"] <= s.ttl, side
    assert side["acknowledged_while_another_led"] == 0 and side["kept"] is True, side
    # nothing acknowledged is lost, on either side: counted in the new leader by the test itself
    assert side["lost"] == 0, side
    assert _agrees(side, _isolated_rows(Writer(cluster).conninfo)), side
    acked = {i for i, _, _ in writer.acked}
    assert acked <= held_ids(cluster), sorted(acked - held_ids(cluster))[:10]
    # healed: the old leader follows the new one, and its link carries packets again
    status = cluster.status()
    assert status["leader"] == new.name and len(status["members"]) == 2, status
    assert not any(n["isolated"] for n in status["nodes"]), status
    assert result["healed_after_s"] >= CUT_S and result["rejoined_after_s"] >= result["healed_after_s"]
    cluster.stop()
    cluster.remove()
    assert not any((NETNS_DIR / ns).exists() for ns in namespaces)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert not any(n.net is not None and n.net.host_iface in links for n in cluster.nodes)


def test_an_isolated_asynchronous_leader_acknowledges_writes_that_are_lost(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(nodes=2, sync=False, netns="auto", **QUICK)
    result = partition.isolate(cluster, CUT_S)
    side = result["isolated_side"]
    # until Patroni demotes it, the cut-off leader commits locally: those rows never reached the
    # replica, and the rewind after healing drops them
    assert side["acknowledged_after_fault"] > 0, side
    assert side["last_acknowledged_after_s"] <= side["demoted_after_s"] + 0.1, side
    assert side["acknowledged_while_another_led"] == 0 and side["kept"] is True, side
    assert _agrees(side, _isolated_rows(Writer(cluster).conninfo)), side
    assert 0 < side["lost"] <= side["acknowledged_after_fault"], side
    assert result["isolated_lost"] == side["lost"]


def test_isolate_needs_namespaces_and_a_free_subnet(start_cluster: StartCluster) -> None:
    cluster = start_cluster(nodes=2, **QUICK)
    with pytest.raises(HaError, match="--netns"):
        partition.isolate(cluster, CUT_S)
    with pytest.raises(HaError, match="private IPv4 /24"):
        choose_subnet("10.0.0.0/8")
    with pytest.raises(HaError, match="already has addresses"):
        choose_subnet("127.0.0.0/24")
    assert choose_subnet("auto").startswith("10.204.")


def test_ctrl_c_removes_the_nodes_namespaces_and_veths() -> None:
    command = [sys.executable, "-m", "caplab.systems.pgha", "start", "--port", "0", "--rest-port", "0"]
    command += [
        "--etcd-port",
        "0",
        "--ttl",
        "10",
        "--loop-wait",
        "2",
        "--retry-timeout",
        "4",
        "--netns",
        "auto",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port, status = read_started(proc, "pgha")
        namespaces = [n["namespace"] for n in status["nodes"]]
        hosts = [n["host"] for n in status["nodes"]]
        assert all((NETNS_DIR / ns).exists() for ns in namespaces) and status["nodes"][0]["port"] == port
        assert all(h.startswith("10.204.") for h in hosts), hosts
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        assert not any((NETNS_DIR / ns).exists() for ns in namespaces)
        addresses = subprocess.run(
            ["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True
        ).stdout
        subnet = hosts[0].rsplit(".", 1)[0] + "."
        assert subnet not in addresses, "a veth's host end outlived its cluster"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
