"""Talking to one node of the pair: connecting with the pair's password, asking whether it is a
primary or a standby, and the replication facts a role change waits on."""

from __future__ import annotations

import time
from typing import Any, Literal

import psycopg

from caplab.systems.pgpair.server import Server, ServerError

Role = Literal["primary", "standby", "down"]
CONNECT_TIMEOUT_S = 3


class PasswordRefused(ServerError):
    """The node answered but refused the password: every later step would fail the same way."""


def connect(node: Server, role: str, password: str, dbname: str = "postgres") -> psycopg.Connection[Any]:
    """An autocommit connection to ``node``; a refused password becomes a clear PasswordRefused
    (the password itself never appears in the message)."""
    try:
        return psycopg.connect(
            host="127.0.0.1",
            port=node.port,
            user=role,
            password=password,
            dbname=dbname,
            connect_timeout=CONNECT_TIMEOUT_S,
            autocommit=True,
            application_name="caplab-pgpair",
        )
    except psycopg.OperationalError as e:
        if e.sqlstate == "28P01" or "password authentication failed" in str(e):
            raise PasswordRefused(
                f"{node.name} (127.0.0.1:{node.port}) refused the password for role {role!r}: "
                "give the pair's password (PGPAIR_PASSWORD, or the pair's pgpass file)"
            ) from None
        raise


def role_of(node: Server, role: str, password: str) -> Role:
    """What the node is now: ``down`` when nothing answers on its port."""
    if node.postmaster_pid() is None:
        return "down"
    try:
        with connect(node, role, password) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    except PasswordRefused:
        raise
    except psycopg.Error:
        return "down"
    return "standby" if row and row[0] else "primary"


def lsn(text: str | None) -> int:
    """``'16/B374D848'`` as a byte position (0 for none)."""
    if not text:
        return 0
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def received_lsn(node: Server, role: str, password: str) -> int:
    """How far the standby has received (and flushed) the primary's WAL."""
    with connect(node, role, password) as conn:
        row = conn.execute("SELECT pg_last_wal_receive_lsn()::text").fetchone()
    return lsn(row[0] if row else None)


def replication(primary: Server, role: str, password: str) -> list[dict[str, Any]]:
    """The primary's view of its standbys: who, state, sync state, and bytes not yet replayed."""
    query = (
        "SELECT application_name, state, sync_state, "
        "pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint FROM pg_stat_replication"
    )
    with connect(primary, role, password) as conn:
        rows = conn.execute(query).fetchall()
    return [{"standby": r[0], "state": r[1], "sync_state": r[2], "replay_lag_bytes": r[3]} for r in rows]


def wait_streaming(primary: Server, standby: Server, role: str, password: str, timeout_s: float) -> None:
    """Until ``standby`` streams from the primary and has flushed all the WAL the primary had
    when we began (so it is past any timeline switch); ServerError naming both otherwise."""
    query = (
        "SELECT state = 'streaming' AND flush_lsn >= %s::pg_lsn FROM pg_stat_replication "
        "WHERE application_name = %s"
    )
    deadline = time.monotonic() + timeout_s
    target: str | None = None
    while True:
        try:
            with connect(primary, role, password) as conn:
                if target is None:
                    row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
                    target = row[0] if row else "0/0"
                rows = conn.execute(query, (target, standby.name)).fetchall()
        except PasswordRefused:
            raise
        except psycopg.Error:
            rows = []
        if any(r[0] for r in rows):
            return
        if time.monotonic() > deadline:
            raise ServerError(
                f"{standby.name} is not streaming from {primary.name} after {timeout_s:.0f} s "
                f"(see {standby.log_file})"
            )
        time.sleep(0.05)


def ensure_slot(primary: Server, slot: str, role: str, password: str) -> None:
    """A physical replication slot for the standby named ``slot``, so the primary keeps the WAL it
    has not received yet."""
    with connect(primary, role, password) as conn:
        conn.execute(
            "SELECT pg_create_physical_replication_slot(%s, true) "
            "WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = %s)",
            (slot, slot),
        )


def drop_idle_slots(node: Server, role: str, password: str) -> None:
    """A node that has just become a standby drops the slots it held as a primary (they would
    keep WAL on it for nobody)."""
    with connect(node, role, password) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active")


def wait_writable(node: Server, role: str, password: str, timeout_s: float) -> None:
    """Until ``node`` answers as a primary."""
    deadline = time.monotonic() + timeout_s
    while role_of(node, role, password) != "primary":
        if time.monotonic() > deadline:
            raise ServerError(
                f"{node.name} did not accept writes within {timeout_s:.0f} s (see {node.log_file})"
            )
        time.sleep(0.02)
