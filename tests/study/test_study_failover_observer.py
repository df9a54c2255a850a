"""Recovery time read by caplab against an independent observer, on real PostgreSQL: while the
availability-groups quick study fails its pair over, a separate psycopg client writes a row to a
few of the databases every 10 ms, reconnecting to whichever node is primary, and keeps when each
attempt began and ended and whether it succeeded. The observer's attempts bracket each database's
return: after the start of its last failed attempt (that attempt found it still down, somewhere
in its span) and no later than the end of its first successful one. A reconnection (a new session
on each node, authentication, the read-write check) takes a few milliseconds on a quiet machine
and far longer on a busy one, so the bracket is as wide as the machine makes it. caplab's
per-database recovery must fall inside it, widened by 100 ms plus caplab's interval (100 ms: the
series' resolution, its start being what caplab reports) plus the time between two of caplab's
probes of one database (100 ms at 10/s a database: caplab can see a database back no sooner than
its next probe) — and, late, by what the observer's own successful reconnection took: caplab's
probe must reconnect too, and on this machine at that moment a reconnection took that long (caplab
was 0.22 s past the observer's first write once, against a 0.2 s allowance without it)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
import yaml

from caplab import studies
from support.studies import caplab, json_out

pytestmark = pytest.mark.slow  # a 20-database pair built, seeded and switched over under probes

OBSERVED = ("ag_0", "ag_7", "ag_13")
OBSERVER_PERIOD_S = 0.01
URL = (
    "postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/{db}?target_session_attrs=read-write&connect_timeout=1"
)


class Observer:
    """A client of its own, outside caplab: writes a row to one database every 10 ms, reconnecting
    to whichever node is primary after a failure, and keeps each attempt's start, end and
    outcome."""

    def __init__(self, database: str, passfile: Path) -> None:
        self.url = URL.format(db=database) + f"&passfile={passfile}"
        self.writes: list[tuple[float, float, bool]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        while not self.stop.wait(OBSERVER_PERIOD_S):
            began = time.time()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.url, autocommit=True)
                    conn.execute("CREATE TABLE IF NOT EXISTS observer (at double precision)")
                conn.execute("INSERT INTO observer VALUES (%s)", (time.time(),))
                self.writes.append((began, time.time(), True))
            except psycopg.Error:
                self.writes.append((began, time.time(), False))
                if conn is not None:
                    conn.close()
                conn = None

    def recovered_after(self, fault_at: float) -> tuple[float, float, float] | None:
        """When the database came back after a fault, in seconds from it, as this client can tell:
        between the start of its last failed attempt and the end of its first successful one
        after it, with how long that successful attempt (a reconnection) took (None: no outage
        seen, or no success after it)."""
        after = [w for w in self.writes if w[0] >= fault_at]
        first_failure = next((k for k, (_, _, ok) in enumerate(after) if not ok), None)
        if first_failure is None:
            return None
        back = next((k for k in range(first_failure, len(after)) if after[k][2]), None)
        if back is None:
            return None
        began, ended, _ = after[back]
        return after[back - 1][0] - fault_at, ended - fault_at, ended - began


def test_caplab_per_database_recovery_agrees_with_an_independent_observer(shared_dir: Path) -> None:
    """Recovery read from caplab's per-database series against a separate psycopg client writing
    every 10 ms to a few of the databases: within 100 ms plus one interval plus one probe period. The action
    notes the wall-clock time it starts, the observer's fault time."""
    path = studies.prepare("availability-groups", shared_dir) / "quick.yaml"
    # the pair in the test's directory rather than the cell's runtime one, which goes with the
    # cell: the observer reads the pair's passfile from it while the study runs
    study = yaml.safe_load(path.read_text().replace("{runtime}/ag-", f"{shared_dir}/ag-"))
    study["factors"] = {"zip": {"traffic": ["0%"], "action": ["switchover"]}}
    # Room for a switchover slowed by a busy machine: 18 − 3 = 15 s after it (the trial was 30 s).
    # On this 2-core machine beside other tests the slowest switchover seen had its databases back
    # 10.9 s after the fault at a load average of 8, and a primary writable only after 13.9 s at 16–20
    # (where the availability-groups test, asserting all 20 back within its 12 − 3 = 9 s, fails).
    # Only the three observed databases must be back here.
    study["load"] |= {"repeat": 1, "duration": "18s"}
    switchover = study["sut"]["actions"]["switchover"]
    study["actions"] = [{"at": "3s", "name": "switchover", "run": f"date +%s.%N > fault_at && {switchover}"}]
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    observers = [Observer(db, shared_dir / "ag-switchover" / "pgpass") for db in OBSERVED]
    for o in observers:
        o.thread.start()
    try:
        done = caplab(
            "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "--no-report", timeout=600
        )
    finally:
        for o in observers:
            o.stop.set()
            o.thread.join(timeout=10)
    assert done.returncode == 0, done.stderr[-4000:]
    probe_period = 1.0 / float(study["load"]["rate"])  # per database (load.per_target)
    [cell] = json_out(done)["cells"]
    [failover] = cell["metrics"]["failover"]
    by_db = {d["database"]: d["recovery_s"] for d in failover["recovery"]["databases"]}
    resolution = failover["recovery"]["resolution_s"]
    fault_at = float((shared_dir / "fault_at").read_text())
    seen = {db: o.recovered_after(fault_at) for o, db in zip(observers, OBSERVED, strict=True)}
    compared = {db: (by_db[db], seen[db]) for db in OBSERVED}
    for db, (caplab_s, observed) in compared.items():
        assert observed is not None, f"{db}: the observer saw no outage and recovery"
        down_at, up_by, reconnection = observed
        assert caplab_s is not None, compared
        assert down_at - 0.1 - resolution <= caplab_s <= up_by + reconnection + 0.1 + probe_period, compared
