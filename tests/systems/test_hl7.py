"""The hl7 engine as a sender sees it: AA only once the message is committed, AE for malformed
input (counted and kept), duplicates acknowledged but queued once, counters that agree with the
database; and the operator's side: bad options exit 2, an unreachable PostgreSQL exits 1 with the
reason, rebuild-index, template, stop, and the log placed apart."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import uuid
from pathlib import Path

import psutil
import pytest

from caplab.systems.hl7 import ROLES, generator, mllp
from caplab.systems.hl7.message import ack_code
from caplab.systems.hl7.postgres_queue import SCHEMA_ENV
from caplab.systems.hl7.queue import URL_ENV
from support.hl7_client import Start, db_rows, send_channels, send_one, written_files

HL7 = [sys.executable, "-m", "caplab.systems.hl7"]


def hl7_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HL7, *args], capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.mark.slow
def test_aa_comes_once_the_message_is_committed(start_hl7: Start) -> None:
    engine = start_hl7(1)
    [(control_id, body)] = generator.messages(1, seed=7)
    reply = send_one(engine.ports[0], body)
    assert ack_code(reply) == "AA" and f"MSA|AA|{control_id}".encode() in reply
    # Another connection sees the row at once: it was committed before the AA left.
    rows = db_rows(
        engine.data_dir / "queue.db",
        "SELECT channel, message_type FROM messages WHERE control_id = ?",
        control_id,
    )
    assert len(rows) == 1 and rows[0][0] == 0
    engine.wait_drained()
    assert written_files(engine.out_dir or Path(), 0) == [control_id]
    document = json.loads((engine.out_dir or Path()).joinpath("channel-0", f"{control_id}.json").read_text())
    assert document["control_id"] == control_id and document["patient"]["id"].startswith("P")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"this is not HL7", "no MSH segment"),
        (b"MSH|^~\\&|LAB|H|ENG|H|20260101||ORU^R01|||P|2.5\rPID|1||P1", "MSH-10"),
        (b"MSH|^~\\&|LAB|H|ENG|H|20260101||ADT^A01|X1|P|2.5\r%%%|broken", "not a segment"),
    ],
)
@pytest.mark.slow
def test_a_malformed_message_gets_ae_and_is_counted_and_kept(
    start_hl7: Start, body: bytes, reason: str
) -> None:
    engine = start_hl7(2)
    reply = send_one(engine.ports[1], body)
    assert ack_code(reply) == "AE" and reason.encode() in reply
    kept = db_rows(engine.data_dir / "queue.db", "SELECT channel, reason, body FROM rejected")
    assert len(kept) == 1 and kept[0][0] == 1 and reason in str(kept[0][1]) and kept[0][2] == body
    samples = engine.metrics()
    assert samples['hl7_rejected_total{channel="1"}'] == 1
    assert engine.total("hl7_queued_total", samples) == 0
    assert db_rows(engine.data_dir / "queue.db", "SELECT count(*) FROM messages") == [(0,)]


def test_a_duplicate_control_id_is_acknowledged_and_queued_once(start_hl7: Start) -> None:
    engine = start_hl7(2)
    [(_, body)] = generator.messages(1, seed=3)
    assert [ack_code(send_one(engine.ports[0], body)) for _ in range(3)] == ["AA"] * 3
    assert ack_code(send_one(engine.ports[1], body)) == "AA"  # a channel of its own: a message of its own
    samples = engine.wait_drained()
    assert samples['hl7_queued_total{channel="0"}'] == 1 and samples['hl7_duplicates_total{channel="0"}'] == 2
    assert db_rows(
        engine.data_dir / "queue.db", "SELECT channel, count(*) FROM messages GROUP BY channel"
    ) == [
        (0, 1),
        (1, 1),
    ]


def test_with_repeats_queue_a_control_id_is_unique_per_connection_only(start_hl7: Start) -> None:
    """--repeats queue: a load generator numbering from 0 on every run sends the same control ids
    on new connections, and each run's messages are queued; on one connection a repeat is still
    acknowledged and queued once."""
    engine = start_hl7(1, args=("--repeats", "queue"))
    [(_, body)] = generator.messages(1, seed=3)
    with mllp.Connection("127.0.0.1", engine.ports[0], timeout_s=30) as conn:
        assert [ack_code(conn.send(body)) for _ in range(2)] == ["AA", "AA"]
    assert ack_code(send_one(engine.ports[0], body)) == "AA"
    samples = engine.wait_drained()
    assert samples['hl7_queued_total{channel="0"}'] == 2 and samples['hl7_duplicates_total{channel="0"}'] == 1
    assert db_rows(engine.data_dir / "queue.db", "SELECT count(*) FROM messages") == [(2,)]


@pytest.mark.slow
def test_counters_match_the_database(start_hl7: Start) -> None:
    engine = start_hl7(4)
    batches = [generator.messages(60, seed=c) for c in range(4)]
    acked = send_channels(engine.ports, batches)
    for bad in (b"garbage", b"MSH|^~\\&|A|B|C|D|2026||ADT^A01||P|2.5"):
        send_one(engine.ports[2], bad)
    send_one(engine.ports[3], batches[3][0][1])  # a duplicate
    samples = engine.wait_drained()
    db = engine.data_dir / "queue.db"
    by_state = {
        (c, s): n for c, s, n in db_rows(db, "SELECT channel, state, count(*) FROM messages GROUP BY 1, 2")
    }
    rejected = dict(db_rows(db, "SELECT channel, count(*) FROM rejected GROUP BY channel"))
    for c in range(4):
        assert samples[f'hl7_queued_total{{channel="{c}"}}'] == len(acked[c]) == by_state[(c, "written")]
        assert samples[f'hl7_written_total{{channel="{c}"}}'] == by_state[(c, "written")]
        assert samples[f'hl7_transformed_total{{channel="{c}"}}'] == by_state[(c, "written")]
        assert samples[f'hl7_rejected_total{{channel="{c}"}}'] == rejected.get(c, 0)
        assert samples[f'hl7_queue_depth{{channel="{c}"}}'] == 0
        assert len(written_files(engine.out_dir or Path(), c)) == by_state[(c, "written")]
    assert (
        samples['hl7_received_total{channel="2"}'] == 62 and samples['hl7_duplicates_total{channel="3"}'] == 1
    )
    assert set(by_state) == {(c, "written") for c in range(4)}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--channels", "0"], "--channels: must be 1…64, got 0"),
        (["--channels", "four"], "argument --channels: invalid int value"),
        (["--port", "65534", "--channels", "4"], "--port: channels 65534…65537 are not all ports"),
        (["--db", "mysql://localhost/x"], "--db: expected sqlite:///PATH or postgresql://"),
        (["--db", "postgresql://caplab:s3cret@127.0.0.1/x"], "--db: a password on the command line"),
        (["--db", "sqlite:///tmp/q.db", "--db-dir", "/tmp/x"], "--db-dir: give --db sqlite:///PATH or"),
        (["--sink", "nowhere"], "--sink: expected HOST:PORT"),
        (["--batch", "0"], "--batch: must be 1…10000"),
    ],
)
def test_a_channel_config_that_does_not_parse_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = hl7_cli("start", "--data-dir", str(tmp_path), *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "s3cret" not in done.stderr
    assert not (tmp_path / "queue.db").exists()


def test_an_unreachable_postgresql_fails_the_start_with_the_reason(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    env = dict(os.environ) | {URL_ENV: f"postgresql://caplab:s3cret-pw@127.0.0.1:{closed}/nothing"}
    done = hl7_cli("start", "--data-dir", str(tmp_path), "--port", "0", "--metrics-port", "0", env=env)
    assert done.returncode == 1
    assert (
        f"cannot open the queue: cannot connect to postgresql://caplab:***@127.0.0.1:{closed}/nothing"
        in done.stderr
    )
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "listening" not in done.stdout


@pytest.mark.slow
def test_rebuild_index_runs_while_messages_are_processed(start_hl7: Start) -> None:
    engine = start_hl7(2)
    batches = [generator.messages(150, seed=c) for c in range(2)]
    rebuilds: list[subprocess.CompletedProcess[str]] = []

    def rebuild_midway(sent: int) -> None:
        if sent == 50:
            rebuilds.append(hl7_cli("rebuild-index", "--data-dir", str(engine.data_dir)))

    acked = send_channels(engine.ports, batches, between=rebuild_midway)
    [done] = rebuilds
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["rebuild_s"] >= 0 and result["rows"] >= 50
    engine.wait_drained()
    assert [written_files(engine.out_dir or Path(), c) for c in range(2)] == [sorted(a) for a in acked]


@pytest.mark.parametrize("kind", generator.KINDS)
def test_the_template_is_a_message_the_engine_accepts(start_hl7: Start, kind: str) -> None:
    done = hl7_cli("template", "--kind", kind, "--results", "3", "--prefix", "T9-")
    assert done.returncode == 0 and done.stdout.count("{seq}") >= 2
    engine = start_hl7(1)
    for seq in (1, 2):
        body = done.stdout.replace("{seq}", str(seq)).replace("\r", "\n")  # as caplab load reads it
        assert ack_code(send_one(engine.ports[0], body.encode())) == "AA"
    engine.wait_drained()
    assert written_files(engine.out_dir or Path(), 0) == ["T9-1", "T9-2"]
    document = json.loads((engine.out_dir or Path()).joinpath("channel-0", "T9-2.json").read_text())
    assert document["patient"]["id"] == "T9-P2"
    if kind == "oru":
        assert len(document["orders"][0]["observations"]) == 3


def test_documents_go_to_a_downstream_mllp_sink(start_hl7: Start) -> None:
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def sink() -> None:
        from caplab.systems.hl7 import mllp

        conn, _ = listener.accept()
        frames = mllp.Frames()
        with conn:
            while data := conn.recv(65536):
                for document in frames.feed(data):
                    received.append(document)
                    conn.sendall(mllp.frame(b"MSH|^~\\&|SINK|||||ACK|1|P|2.5\rMSA|AA|x"))

    threading.Thread(target=sink, daemon=True).start()
    engine = start_hl7(1, args=("--sink", f"127.0.0.1:{listener.getsockname()[1]}"))
    [acked] = send_channels(engine.ports, [generator.messages(30, seed=5)])
    engine.wait_drained()
    assert sorted(json.loads(d)["control_id"] for d in received) == sorted(acked)
    listener.close()


@pytest.mark.slow
def test_files_go_where_they_are_placed_and_survive_a_restart(start_hl7: Start, tmp_path: Path) -> None:
    """Database (with SQLite's WAL beside it), engine log and output each in a directory of its
    own; a second engine on the same directories carries on from the first one's counts."""
    placed = {name: tmp_path / name for name in ("db", "log", "out")}
    args = tuple(a for name, d in placed.items() for a in (f"--{name}-dir", str(d)))
    engine = start_hl7(1, args=args)
    [acked] = send_channels(engine.ports, [generator.messages(20, seed=2)])
    assert {p.name for p in placed["db"].iterdir()} == {"queue.db", "queue.db-wal", "queue.db-shm"}
    os.kill(engine.worker_pid(0), signal.SIGKILL)
    engine.wait_until(lambda m: "restarting it" in (placed["log"] / "hl7.log").read_text(), timeout_s=30)
    engine.wait_drained()
    assert written_files(placed["out"], 0) == sorted(acked)
    assert engine.stop() == 0
    again = start_hl7(1, data_dir=engine.data_dir, args=args)
    samples = again.metrics()
    assert samples['hl7_written_total{channel="0"}'] == samples['hl7_queued_total{channel="0"}'] == len(acked)


@pytest.mark.slow
def test_stop_ends_the_engine_and_every_child(start_hl7: Start) -> None:
    engine = start_hl7(2)
    children = psutil.Process(engine.process.pid).children()
    assert len(children) == 3  # the receiver and a worker per channel
    done = hl7_cli("stop", "--data-dir", str(engine.data_dir))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"stopped": engine.process.pid, "was_running": True}
    assert engine.process.wait(timeout=10) == 0
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []
    assert not (engine.data_dir / "engine.json").exists()


@pytest.mark.slow
def test_a_sigkilled_supervisor_leaves_no_orphans(start_hl7: Start) -> None:
    engine = start_hl7(2)
    children = psutil.Process(engine.process.pid).children()
    engine.process.kill()
    engine.process.wait()
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


def test_caplab_systems_start_runs_hl7_until_sigterm(tmp_path: Path) -> None:
    caplab = Path(sys.executable).parent / "caplab"
    args = ["systems", "start", "hl7", "--channels", "1", "--data-dir", str(tmp_path)]
    proc = subprocess.Popen(
        [str(caplab), *args, "--port", "0", "--metrics-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    listening = proc.stdout.readline()
    assert listening.startswith("listening 127.0.0.1:")
    port = int(listening.rsplit(":", 1)[1])
    assert ack_code(send_one(port, generator.messages(1)[0][1])) == "AA"
    engine = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children()]
    assert len(engine) == 3 and all(ROLES["engine"] in " ".join(p.cmdline()) for p in engine)
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def test_messages_dropped_as_files_are_queued_written_and_their_files_removed(
    start_hl7: Start, tmp_path: Path
) -> None:
    drops = tmp_path / "drop"
    engine = start_hl7(2, args=("--drop-dir", str(drops)))
    messages = generator.messages(40, seed=4, prefix="F")
    for i, (_, body) in enumerate([*messages, ("", b"not HL7 at all")]):
        partial = drops / "channel-1" / f".{i:04d}.partial"
        partial.write_bytes(body)
        partial.rename(drops / "channel-1" / f"{i:04d}.hl7")  # dropped whole
    # Committed, not just read: a file read and not yet queued would leave the channel "drained".
    engine.wait_until(
        lambda m: m['hl7_queued_total{channel="1"}'] + m['hl7_rejected_total{channel="1"}'] == 41,
        timeout_s=30,
    )
    samples = engine.wait_drained()
    assert written_files(engine.out_dir or Path(), 1) == sorted(c for c, _ in messages)
    assert samples['hl7_rejected_total{channel="1"}'] == 1
    kept = db_rows(engine.data_dir / "queue.db", "SELECT channel, body FROM rejected")
    assert kept == [(1, b"not HL7 at all")]
    engine.wait_until(lambda _: not list(drops.rglob("*.*")), timeout_s=10)  # deleted after the commit
    assert sorted(p.name for p in drops.rglob("*")) == ["channel-0", "channel-1"]


def test_rebuild_index_on_postgresql_finds_the_engine_from_its_data_dir(
    start_hl7: Start, pg_url: str
) -> None:
    """engine.json names the database without its password and the schema; the password comes
    from PGPASSWORD, as it would for any libpq client."""
    schema = f"hl7_{uuid.uuid4().hex[:12]}"
    engine = start_hl7(1, db=pg_url, env=dict(os.environ) | {SCHEMA_ENV: schema})
    send_channels(engine.ports, [generator.messages(30, seed=8)])
    info = json.loads((engine.data_dir / "engine.json").read_text())
    password = urllib.parse.urlsplit(pg_url).password
    assert password and password not in json.dumps(info) and info["schema"] == schema
    env = {k: v for k, v in os.environ.items() if k not in (URL_ENV, SCHEMA_ENV)} | {"PGPASSWORD": password}
    done = hl7_cli("rebuild-index", "--data-dir", str(engine.data_dir), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == 30


def test_an_output_directory_that_cannot_be_made_fails_the_start(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file, not a directory")
    args = ["--port", "0", "--metrics-port", "0", "--out-dir", str(tmp_path / "out")]
    done = hl7_cli("start", "--data-dir", str(tmp_path / "data"), "--channels", "1", *args)
    assert done.returncode == 1
    assert "worker 0 exited with code 1; stopping" in done.stderr and "Not a directory" in done.stderr
    assert "listening" not in done.stdout


@pytest.mark.slow
def test_db_start_puts_the_log_on_its_own_directory_and_the_engine_queues_there(start_hl7: Start) -> None:
    """hl7 db start --wal: PostgreSQL's pg_wal is the log directory given (a volume of its own in the
    hardware study), the engine queues through the passfile it wrote, and db stop ends the server."""
    root = Path(tempfile.mkdtemp(prefix="caplab-test-hl7db-"))
    root.chmod(0o755)  # the server user enters it
    hl7 = [sys.executable, "-m", "caplab.systems.hl7", "db"]
    where = ["--data", str(root / "data"), "--wal", str(root / "log")]
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        passfile = root / "pgpass"
        done = subprocess.run(
            [*hl7, "start", *where, "--port", str(port), "--passfile", str(passfile)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        info = json.loads(done.stdout)
        assert (
            (root / "data" / "hl7db" / "pg_wal").resolve() == Path(info["wal"]) == root / "log" / "hl7db-wal"
        )
        engine = start_hl7(
            1,
            db=f"postgresql://caplab@127.0.0.1:{port}/postgres",
            env={**os.environ, "PGPASSFILE": str(passfile)},
        )
        [(_, body)] = generator.messages(1, seed=5)
        assert ack_code(send_one(engine.ports[0], body)) == "AA"
        assert engine.wait_drained()['hl7_written_total{channel="0"}'] == 1
        engine.stop()
        assert any((root / "log" / "hl7db-wal").iterdir()), "the log was written where it was put"
    finally:
        subprocess.run([*hl7, "stop", *where], capture_output=True, timeout=120, check=False)
        shutil.rmtree(root, ignore_errors=True)
    assert not (root / "data").exists()
