"""pgpair's roles found where pg_ctl put them: daemonised, outside any start command's process tree,
named by the ``primary.pid``/``standby.pid`` links the pair keeps. The CPU a role collector
attributes is checked against /proc itself: utime + stime of each postmaster and every process under
it (what it reaped included), over the same window."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from caplab.collect import RoleCollector, RoleSpec
from caplab.collect.proctable import ProcessTable, ProcStat, read_stat
from caplab.systems.pgpair import Pair, failover
from caplab.systems.pgpair.nodes import connect

StartPair = Callable[..., Pair]
pytestmark = pytest.mark.slow  # real servers


def tree_cpu_s(root: int) -> float:
    """CPU seconds of ``root`` and all its descendants, their reaped children's included (/proc)."""
    procs = ProcessTable().at(None).procs
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        p = procs.get(pid)
        if p is None:
            continue
        total += p.user_s + p.system_s + p.children_user_s + p.children_system_s
        stack += [q.pid for q in procs.values() if q.ppid == pid]
    return total


def write_for(pair: Pair, seconds: float) -> int:
    """Commits one row at a time on the primary for ``seconds`` (each one replicated): the load."""
    primary = pair.primary()
    assert primary is not None
    n = 0
    with connect(primary, pair.state.superuser, pair.password) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS ledger (id int PRIMARY KEY, pad text)")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.execute("INSERT INTO ledger VALUES (%s, repeat('x', 200))", (n,))
            n += 1
    return n


def test_the_primary_and_standby_are_found_by_their_pidfiles_and_their_cpu_is_procs(
    start_pair: StartPair,
) -> None:
    pair = start_pair(sync="on")
    table = ProcessTable()
    roles = {
        name: RoleCollector(RoleSpec(name, pidfile=str(pair.data_dir / f"{name}.pid")), table)
        for name in ("primary", "standby")
    }
    postmasters = {"primary": pair.nodes[0].postmaster_pid(), "standby": pair.nodes[1].postmaster_pid()}
    assert all(postmasters.values())
    # A connection made before the window: its backend is in the tree throughout.
    loader = threading.Thread(target=write_for, args=(pair, 3.0))
    before = {name: tree_cpu_s(pid) for name, pid in postmasters.items() if pid}
    for role in roles.values():
        role.start()
    began = time.monotonic()
    loader.start()
    loader.join()
    time.sleep(0.3)  # the standby replays the last rows
    seen = {name: 0.0 for name in roles}
    spans = {name: role.sampled_at for name, role in roles.items()}
    samples = {name: role.sample(time.monotonic() - began) for name, role in roles.items()}
    after = {name: tree_cpu_s(pid) for name, pid in postmasters.items() if pid}
    for name, role in roles.items():
        cpu = next(s.value for s in samples[name] if s.metric == "cpu_percent")
        seen[name] = cpu / 100 * (role.sampled_at - spans[name])
        assert postmasters[name] in role.pids
        assert role.missing is None
    truth = {name: after[name] - before[name] for name in roles}
    for name in roles:
        assert truth[name] > 0.05, f"{name} used CPU under load: {truth}"
        # Backends that connected during the window are counted whole by both; the tolerance is
        # /proc's tick (10 ms) per process and per reading.
        assert seen[name] == pytest.approx(truth[name], rel=0.10, abs=0.05), (seen, truth)


def test_the_role_links_follow_a_switchover(start_pair: StartPair) -> None:
    pair = start_pair(sync="on")
    old, new = pair.nodes

    def primary_pid() -> ProcStat | None:
        return read_stat(int((pair.data_dir / "primary.pid").read_text().split()[0]))

    first = primary_pid()
    assert first is not None and first.pid == old.postmaster_pid()
    failover.switchover(pair)
    second = primary_pid()
    assert second is not None and second.pid == new.postmaster_pid()
    standby = int((pair.data_dir / "standby.pid").read_text().split()[0])
    assert standby == old.postmaster_pid()
