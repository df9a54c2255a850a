"""Acknowledged transactions through a killed primary on real PostgreSQL, K = 10 times with synchronous
replication and 4 times with asynchronous (two cells of one study): pgpair under tpcb with a ledger
row in each transaction, its primary SIGKILLed 1 s into each 6.5 s trial and the
standby promoted a second later (the killed node rewound and rejoined as the next trial's standby). With
synchronous replication nothing acknowledged may be lost and every trial succeeds (10/10); with
asynchronous replication the loss caplab reports must be what the ledger on the new primary shows,
counted here apart from caplab: a statement trigger saves the ledger's rows to a file each time
caplab empties it after a trial, and the test sets them against each trial's acknowledged count
(the commits the engine saw answered, interval by interval)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.studies import caplab, free_ports, json_out

pytestmark = pytest.mark.slow  # two pairs built and each primary killed ten times under load

TRIALS = {"on": 10, "off": 4}
"""The issue's ten trials where nothing may be lost; asynchronous trials check the count, four suffice."""

# The ready check: the standby is up (the primary was seeded first), and the ledger exists with a
# trigger that writes its rows to a file (as the server's user) before each TRUNCATE.
READY = '''
import socket, sys
import psycopg
pair, saved = sys.argv[1], sys.argv[2]
try:
    socket.create_connection(("127.0.0.1", {standby}), timeout=1).close()
    url = ("postgresql://caplab@127.0.0.1:{primary}/ag_0"
           f"?passfile={{pair}}/pgpass&target_session_attrs=read-write")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS caplab_ledger (seq bigint PRIMARY KEY, at timestamptz DEFAULT now())"
        )
        conn.execute(f"""CREATE OR REPLACE FUNCTION keep_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              EXECUTE format('COPY (SELECT seq FROM caplab_ledger) TO %L',
                             '{{saved}}/' || to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') || '.txt');
              RETURN NULL;
            END $$""")
        conn.execute("DROP TRIGGER IF EXISTS keep_ledger ON caplab_ledger")
        conn.execute(
            "CREATE TRIGGER keep_ledger BEFORE TRUNCATE ON caplab_ledger "
            "FOR EACH STATEMENT EXECUTE FUNCTION keep_ledger()"
        )
except (OSError, psycopg.Error):
    sys.exit(1)
'''


def study(saved: Path, port: int) -> dict[str, Any]:
    """The study: a cell for each mode, in the order of ``TRIALS``, one after the other on the same
    ports (its pair's primary on ``port``, its standby on ``port`` + 1), each with its own pair and
    as many trials as ``TRIALS`` gives it. One run rather than one per mode: one caplab start and
    one report instead of two."""
    pair = "kp-{sync}"
    return {
        "name": "kill-primary-ledger",
        "description": "tpcb from 8 users (20 ms think) on pgpair; its primary killed 1 s into each "
        "of {trials} trials.",
        "target": {
            "postgres": {
                "url": f"postgresql://caplab@127.0.0.1:{port},127.0.0.1:{port + 1}/ag_0"
                "?target_session_attrs=read-write",
                "workload": "tpcb",
                "passfile": f"{pair}/pgpass",
                "ledger": True,
            }
        },
        "sut": {
            "start": f"caplab systems start pgpair --data-dir {pair} --databases 1 --scale 1 --sync {{sync}} "
            f"--port {port}",
            "stop": f"python -m caplab.systems.pgpair stop --data-dir {pair} --remove",
            "ready": {"command": f"{sys.executable} ready.py {pair} {saved}/{{sync}}", "timeout": "180s"},
            "actions": {
                "kill-primary": f"python -m caplab.systems.pgpair kill-primary --data-dir {pair} "
                "--detect-delay 1 --rejoin"
            },
        },
        "factors": {"zip": {"sync": list(TRIALS), "trials": list(TRIALS.values())}},
        # 5.5 s after the kill: the database was back within 2.1–3.3 s of it with the system on one
        # CPU of two (the default placement) and the machine busy; a 5 s trial failed on a slower one.
        # The kill 1 s in (it was 1.5 s, the trial 7 s: the same 6.5 − 1 = 5.5 s after it, 0.5 s less
        # a trial): by then the 8 users have run a second, some 250 commits, the ledger well past
        # the test's 100 before the primary goes.
        # Users who think 20 ms between transactions (some 250/s in all): a ledger of thousands a
        # trial, which needs no saturation. Without think time the test took 148 s of CPU, with it
        # 116 s (the suite's most either way: two pairs built, 14 kills, rewinds and rejoins).
        "load": {"users": 8, "think": "20ms", "duration": "6.5s", "interval": "100ms", "repeat": "{trials}"},
        "recovery": {"within": "10s", "lossless": True},
        "actions": [{"at": "1s", "do": "kill-primary"}],
    }


def saved_ledgers(directory: Path) -> list[set[int]]:
    """The ledger's rows as the trigger saved them, oldest first: one file per TRUNCATE."""
    return [{int(line) for line in f.read_text().split()} for f in sorted(directory.glob("*.txt"))]


def test_a_killed_primary_loses_nothing_acknowledged_when_synchronous_and_what_the_ledger_shows_when_not(
    shared_dir: Path,
) -> None:
    saved = shared_dir / "saved"
    for mode in ("on", "off"):
        (saved / mode).mkdir(parents=True)
        (saved / mode).chmod(0o777)  # written by the PostgreSQL server's own user
    port = free_ports(2)  # pgpair's two nodes: a fixed pair would collide with a parallel worker's
    (shared_dir / "ready.py").write_text(READY.format(primary=port, standby=port + 1))
    path = shared_dir / "study.yaml"
    path.write_text(yaml.safe_dump(study(saved, port), sort_keys=False))
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "--no-report", timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = {c["factors"]["sync"]: c for c in json_out(done)["cells"]}
    assert set(cells) == set(TRIALS), cells.keys()
    for mode, cell in cells.items():
        trials = TRIALS[mode]
        metrics = cell["metrics"]
        ledgers = metrics["ledger"]
        # Every COMMIT the engine saw answered, the warm-up's and one answered as the trial ended
        # included: its intervals, not its measured total (which once left out one such commit).
        acknowledged = [sum(i["completed"] for i in t["intervals"]) for t in cell["trials"]]
        rows = saved_ledgers(saved / mode)[-trials:]  # the last emptyings are the trials'
        assert len(ledgers) == len(acknowledged) == len(rows) == trials, (mode, len(rows))
        for k, (entry, acked, held) in enumerate(zip(ledgers, acknowledged, rows, strict=True)):
            assert acked > 100, f"{mode}, trial {k + 1}: load ran ({acked})"
            assert entry["acknowledged"] == acked and entry["held"] == len(held), (mode, k, entry, len(held))
            assert entry["lost"] == max(0, acked - len(held)), (mode, k, entry, len(held))
    sync = cells["on"]["metrics"]
    assert [e["lost"] for e in sync["ledger"]] == [0] * TRIALS["on"], sync["ledger"]
    assert sync["success"]["text"] == f"{TRIALS['on']}/{TRIALS['on']}", sync["success"]["failures"]
