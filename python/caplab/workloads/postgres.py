"""PostgreSQL workloads: pgbench's own built-in transactions (so `pgbench -i` loads the data and
pgbench can run beside caplab on it), or any pgbench script file, for the engine's PostgreSQL
driver.

Before a run the target is tried once with libpq (psycopg): a refused password or a missing
database is a one-line message before any load starts, libpq finds the password as it always does
(the URL, ``PGPASSWORD``, ``~/.pgpass``), and the scale of pgbench's tables is read from the
database. The engine gets the password beside a URL that no longer holds it: what caplab prints
and stores never does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

TPCB = """\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""
"""pgbench's built-in ``tpcb-like`` transaction, as pgbench itself runs it."""

SELECT_ONLY = """\
\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
"""
"""pgbench's built-in ``select-only`` transaction (``pgbench -S``)."""

BUILT_IN = {"tpcb": TPCB, "select-only": SELECT_ONLY}
CONNECT_TIMEOUT_S = 5


class DatabaseProblem(Exception):
    """The database cannot be used for the load (unreachable, refused, missing tables)."""


@dataclass(frozen=True)
class PostgresTarget:
    url: str
    """The libpq URL without its password: safe to print and store."""
    password: str | None = field(repr=False)
    scale: int
    script: str
    workload: str


def script_for(workload: str | None, sql_file: Path | None) -> tuple[str, str]:
    """``(name, script)``: a built-in workload, or a pgbench script file."""
    if sql_file is not None:
        try:
            return sql_file.name, sql_file.read_text()
        except OSError as e:
            raise DatabaseProblem(f"{sql_file}: {e.strerror}") from e
    name = workload or "tpcb"
    if name not in BUILT_IN:
        raise DatabaseProblem(f"unknown workload {name!r} (built in: {', '.join(BUILT_IN)}; or --sql-file)")
    return name, BUILT_IN[name]


def shown_url(url: str) -> str:
    """The URL without a password, whatever form it was given in."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    hosts_part, sep, tail = rest.partition("/")
    if "@" in hosts_part:
        user, hosts = hosts_part.rsplit("@", 1)
        hosts_part = f"{user.split(':', 1)[0]}@{hosts}"
    return f"{scheme}://{hosts_part}{sep}{tail}"


def prepare(url: str, workload: str | None = None, sql_file: Path | None = None) -> PostgresTarget:
    """Tries the target once, finds the password libpq would use and the pgbench scale."""
    name, script = script_for(workload, sql_file)
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as e:
        raise DatabaseProblem(f"{shown_url(url)}: {e}") from None
    where = shown_url(url)
    try:
        with psycopg.connect(make_conninfo(url, connect_timeout=str(CONNECT_TIMEOUT_S))) as conn:
            password = conn.info.password or params.get("password")
            scale = _scale(conn, where) if ":scale" in script else 1
    except psycopg.OperationalError as e:
        raise DatabaseProblem(f"cannot use {where}: {_first_line(e)}") from None
    return PostgresTarget(where, str(password) if password else None, scale, script, name)


def _scale(conn: psycopg.Connection[tuple[object, ...]], where: str) -> int:
    """pgbench's scale factor: its branches table has one row per unit of scale."""
    try:
        row = conn.execute("SELECT count(*) FROM pgbench_branches").fetchone()
    except psycopg.errors.UndefinedTable:
        raise DatabaseProblem(
            f"{where} has no pgbench tables: load them with `pgbench -i -s SCALE` first"
        ) from None
    scale = int(str(row[0])) if row else 0
    if scale < 1:
        raise DatabaseProblem(f"{where}: pgbench_branches is empty: load it with `pgbench -i -s SCALE`")
    return scale


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
