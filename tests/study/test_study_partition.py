"""A partitioned leader in a study, end to end: the built-in availability-groups/partition.yaml
(pgha's nodes in namespaces of their own, the leader cut off for 16 s under a probe transaction per
database) in synchronous mode, once, on free ports and a free subnet. The trial reads the isolated
side from the action beside the clients' recovery on the majority side, judges it (no split brain,
nothing acknowledged lost), and the report's Summary says it; nothing of the cluster is left."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from caplab import studies
from caplab.systems.pgha.netns import choose_subnet
from support.pgha import require_patroni
from support.require import PROFILES, require
from support.studies import caplab, json_out, on_free_ports

pytestmark = pytest.mark.slow  # a Patroni cluster in namespaces built, its leader cut off once

PORTS = {"pg": (7610, 7611), "rest": (7620, 7621), "etcd": (7630,)}
SHIPPED_SUBNET = "10.204.250."


def test_a_partitioned_leader_is_judged_from_both_sides(shared_dir: Path) -> None:
    require_patroni()
    require(PROFILES, [] if os.geteuid() == 0 else "network namespaces need root")
    shipped = (studies.study_folder("availability-groups") / "partition.yaml").read_text()
    assert SHIPPED_SUBNET in shipped
    subnet = choose_subnet("auto").removesuffix("0/24")
    text = on_free_ports(shipped, PORTS).replace(SHIPPED_SUBNET, subnet)
    text = text.replace('sync: ["on", "off"]', 'sync: ["on"]').replace("repeat: 2", "repeat: 1")
    # Patroni's settings and the cut shortened as far as its rule allows (ttl ≥ loop_wait + 2 ×
    # retry_timeout), and the trial with them: the part's own figures come from its whole run
    for long, short in (
        ("--ttl 10 --loop-wait 2 --retry-timeout 4", "--ttl 6 --loop-wait 1 --retry-timeout 2"),
        ("--seconds 16", "--seconds 9"),
        ("duration: 45s", "duration: 30s"),
    ):
        assert long in text, long
        text = text.replace(long, short)
    path = shared_dir / "partition.yaml"
    path.write_text(text)
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=400
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [cell] = json_out(done)["cells"]
    [failover] = cell["metrics"]["failover"]
    side, verdict = failover["isolated"], failover["verdict"]
    assert side["split_brain_writes"] == 0 and side["lost"] == 0, side
    assert side["demoted_after_s"] is not None and 0 < side["demoted_after_s"] <= 6, side  # ttl 6 s
    assert verdict["success"] is True, verdict
    # the majority side: Patroni's phases, and the clients back on the other node
    p, r = failover["phases"], failover["recovery"]
    assert 0 < p["detected_s"] <= p["elected_s"] <= p["writable_s"] <= p["first_commit_s"] + 0.2, p
    assert r["max_s"] is not None and not r["not_recovered"], r
    results = json.loads((shared_dir / "r" / "results.json").read_text())
    [action] = results["failover"]["actions"]
    expected = {"trials": 1, "split_brain_writes": 0, "lost": 0, "demoted_max_s": side["demoted_after_s"]}
    assert action["isolated"] == expected
    summary = (shared_dir / "r" / "report.md").read_text().split('<a id="summary"></a>', 1)[1]
    assert "the isolated side demoted within" in summary.split("<a id=", 1)[0]
    # the nodes' veths are gone with their namespaces: the subnet is free again
    assert choose_subnet(subnet + "0/24") == subnet + "0/24"
    assert not any(shared_dir.glob("**/pgha.json")), "the cluster removed after its cell"
