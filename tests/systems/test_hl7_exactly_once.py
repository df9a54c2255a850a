"""Every message the hl7 engine acknowledged is written exactly once: with a channel's worker
SIGKILLed in the middle of a batch (the supervisor restarts it and it resumes), and with the whole
engine SIGKILLed mid-load and started again on the same data directory (the senders resend what
was not acknowledged, as MLLP senders do).

The control ids compared are those the senders got an AA for; the written files are named by
control id, so a lost message is a missing file and the database's unique index and state say
whether any message was written twice."""

from __future__ import annotations

import os
import signal
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from caplab.systems.hl7 import RunningHl7, generator
from caplab.systems.hl7.postgres_queue import SCHEMA_ENV
from support.hl7_client import Start, db_rows, send_channels, written_files
from support.studies import free_ports

IN_FLIGHT = "SELECT count(*) FROM messages WHERE channel = ? AND state IN ('transforming', 'transformed')"
Query = Callable[[str, int], list[tuple[Any, ...]]]
"""Runs a query with one parameter (``?``) on the engine's queue database."""


def sqlite_query(engine: RunningHl7) -> Query:
    return lambda sql, param: db_rows(engine.data_dir / "queue.db", sql, param)


def postgres_query(url: str, schema: str) -> Query:
    def query(sql: str, param: int) -> list[tuple[Any, ...]]:
        with psycopg.connect(url, options=f"-c search_path={schema}") as conn:
            return conn.execute(sql.replace("?", "%s"), (param,)).fetchall()

    return query


def assert_exactly_once(engine: RunningHl7, acked: list[list[str]], query: Query | None = None) -> None:
    samples = engine.wait_drained(timeout_s=120)
    query = query or sqlite_query(engine)
    for c, ids in enumerate(acked):
        assert len(ids) == len(set(ids))
        files = written_files(engine.out_dir or Path(), c)
        assert sorted(set(ids) - set(files)) == [], f"channel {c}: acknowledged, never written"
        assert sorted(set(files) - set(ids)) == [], f"channel {c}: written, never acknowledged"
        rows = query("SELECT control_id, state FROM messages WHERE channel = ?", c)
        assert sorted(r[0] for r in rows) == sorted(ids) and {r[1] for r in rows} == {"written"}
        assert samples[f'hl7_written_total{{channel="{c}"}}'] == len(ids)


def stop_mid_batch(engine: RunningHl7, channel: int, query: Query, timeout_s: float = 60) -> int:
    """SIGSTOPs the channel's worker at a moment when it holds claimed or transformed rows (seen
    committed while it is frozen), then SIGKILLs it there; its pid."""
    pid = engine.worker_pid(channel)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        os.kill(pid, signal.SIGSTOP)
        if query(IN_FLIGHT, channel)[0][0] > 0:
            os.kill(pid, signal.SIGKILL)
            return pid
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.003)
    raise AssertionError(f"worker {channel} never held a batch")


@pytest.mark.slow
def test_a_worker_killed_mid_batch_loses_and_repeats_nothing(start_hl7: Start) -> None:
    engine = start_hl7(4, args=("--batch", "40"))
    batches = [generator.messages(150, seed=c, prefix=f"K{c}-") for c in range(4)]
    frozen = engine.worker_pid(1)
    os.kill(frozen, signal.SIGSTOP)  # channel 1's queue fills up while the others run
    acked = send_channels(engine.ports, batches)
    os.kill(frozen, signal.SIGCONT)
    victim = stop_mid_batch(engine, 1, sqlite_query(engine))
    assert_exactly_once(engine, acked)
    assert f"worker 1 (pid {victim}) exited with code -9; restarting it" in engine.stderr_tail()
    assert engine.worker_pid(1) != victim
    assert engine.process.poll() is None


@pytest.mark.slow
def test_an_engine_killed_mid_load_and_restarted_writes_each_message_once(
    start_hl7: Start, tmp_path: Path
) -> None:
    base = free_ports(2)
    args = ("--port", str(base), "--batch", "40")
    data_dir = tmp_path / "engine"
    first = start_hl7(2, data_dir=data_dir, args=args)
    engines = [first]

    def kill_and_restart(sent: int) -> None:
        if sent != 120:
            return
        children = psutil.Process(first.process.pid).children()
        first.process.kill()  # the children die with it (PR_SET_PDEATHSIG)
        first.process.wait()
        psutil.wait_procs(children, timeout=10)
        engines.append(start_hl7(2, data_dir=data_dir, args=args))

    batches = [generator.messages(300, seed=c, prefix=f"R{c}-") for c in range(2)]
    acked = send_channels([base, base + 1], batches, between=kill_and_restart, retry_s=60)
    assert len(engines) == 2
    assert [len(a) for a in acked] == [300, 300]
    assert_exactly_once(engines[1], acked)


@pytest.mark.slow
def test_exactly_once_on_postgresql_across_a_killed_worker(start_hl7: Start, pg_url: str) -> None:
    schema = f"hl7_{uuid.uuid4().hex[:12]}"
    engine = start_hl7(2, db=pg_url, env=dict(os.environ) | {SCHEMA_ENV: schema}, args=("--batch", "40"))
    query = postgres_query(pg_url, schema)
    frozen = engine.worker_pid(0)
    os.kill(frozen, signal.SIGSTOP)
    acked = send_channels(engine.ports, [generator.messages(150, seed=c, prefix=f"PG{c}-") for c in range(2)])
    os.kill(frozen, signal.SIGCONT)
    victim = stop_mid_batch(engine, 0, query)
    assert_exactly_once(engine, acked, query)
    assert f"worker 0 (pid {victim}) exited with code -9; restarting it" in engine.stderr_tail()
    password = urllib.parse.urlsplit(pg_url).password
    assert password and password not in engine.stderr_tail() + (engine.data_dir / "engine.json").read_text()


@pytest.mark.slow
def test_a_killed_receiver_comes_back_on_its_ports_and_nothing_is_lost_or_repeated(start_hl7: Start) -> None:
    engine = start_hl7(2, args=("--port", str(free_ports(2))))
    victims: list[int] = []

    def kill_receiver(sent: int) -> None:
        if sent == 100:
            [pid] = engine.child_pids("receiver")
            os.kill(pid, signal.SIGKILL)  # between a commit and its AA, for some sender
            victims.append(pid)

    batches = [generator.messages(250, seed=c, prefix=f"V{c}-") for c in range(2)]
    acked = send_channels(engine.ports, batches, between=kill_receiver, retry_s=60)
    assert [len(a) for a in acked] == [250, 250]
    assert_exactly_once(engine, acked)
    assert f"receiver (pid {victims[0]}) exited with code -9; restarting it" in engine.stderr_tail()


@pytest.mark.slow
def test_a_lost_database_connection_is_answered_ar_and_the_engine_reconnects(
    start_hl7: Start, pg_url: str
) -> None:
    """Every engine connection is terminated mid-load: the group in flight is answered AR (not
    queued), the receiver and workers exit and are restarted, and senders that resend what was
    refused still get each message written once."""
    schema = f"hl7_{uuid.uuid4().hex[:12]}"
    engine = start_hl7(2, db=pg_url, env=dict(os.environ) | {SCHEMA_ENV: schema}, args=("--batch", "40"))
    terminated: list[int] = []

    def cut_connections(sent: int) -> None:
        if sent == 80:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                    (f"hl7 {schema}",),
                ).fetchall()
            terminated.append(len(rows))

    batches = [generator.messages(200, seed=c, prefix=f"D{c}-") for c in range(2)]
    acked = send_channels(engine.ports, batches, between=cut_connections, retry_s=60)
    assert terminated and terminated[0] >= 3  # the receiver's and each worker's
    assert_exactly_once(engine, acked, postgres_query(pg_url, schema))
    assert "restarting it" in engine.stderr_tail()
