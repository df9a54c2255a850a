"""PostgreSQL workloads: pgbench's own built-in transactions (so `pgbench -i` loads the data and
pgbench can run beside caplab on it), or any pgbench script file, for the engine's PostgreSQL
driver.

Before a run the target is tried once with libpq (psycopg): a refused password or a missing
database is a one-line message before any load starts, libpq finds the password as it always does
(the URL, ``PGPASSWORD``, ``~/.pgpass``), and the scale of pgbench's tables is read from the
database. The engine gets the password beside a URL that no longer holds it: what caplab prints
and stores never does.

psycopg is imported where a database is touched: every `caplab load` imports this module (for
``DatabaseProblem``), and psycopg was about 100 ms of its start-up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

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


def prepare(
    url: str,
    workload: str | None = None,
    sql_file: Path | None = None,
    passfile: Path | None = None,
    ledger: bool = False,
) -> PostgresTarget:
    """Tries the target once, finds the password libpq would use (in ``passfile`` too) and the
    pgbench scale; with ``ledger``, makes the ledger table and adds its row to the transaction."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name, script = script_for(workload, sql_file)
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as e:
        raise DatabaseProblem(f"{shown_url(url)}: {e}") from None
    where = shown_url(url)
    extra = {"passfile": str(passfile)} if passfile is not None else {}
    try:
        with psycopg.connect(make_conninfo(url, connect_timeout=str(CONNECT_TIMEOUT_S), **extra)) as conn:
            if ledger:
                conn.execute(LEDGER_TABLE)
                conn.commit()
                script = with_ledger(script)
            password = conn.info.password or params.get("password")
            scale = _scale(conn, where) if ":scale" in script else 1
    except psycopg.OperationalError as e:
        raise DatabaseProblem(f"cannot use {where}: {_first_line(e)}") from None
    return PostgresTarget(where, str(password) if password else None, scale, script, name)


LEDGER_TABLE = (
    "CREATE TABLE IF NOT EXISTS caplab_ledger (seq bigint PRIMARY KEY, at timestamptz DEFAULT now())"
)
"""One row per acknowledged transaction of a trial (emptied after each: ``:seq`` restarts at 0)."""
LEDGER_ROW = "INSERT INTO caplab_ledger (seq) VALUES (:seq);"


def with_ledger(script: str) -> str:
    """The transaction with its ledger row inside it: acknowledged means both committed. A script
    without a BEGIN becomes one transaction."""
    lines = script.rstrip().splitlines()
    last = lines[-1].strip().rstrip(";").upper() if lines else ""
    if any(line.strip().upper().startswith(("BEGIN", "START TRANSACTION")) for line in lines) and last in (
        "END",
        "COMMIT",
    ):
        return "\n".join([*lines[:-1], LEDGER_ROW, lines[-1]]) + "\n"
    sets = [line for line in lines if line.strip().startswith("\\")]
    body = [line for line in lines if not line.strip().startswith("\\")]
    return "\n".join([*sets, "BEGIN;", *body, LEDGER_ROW, "END;"]) + "\n"


def ledger_rows(url: str, passfile: Path | None = None, wait_s: float = 60.0, empty: bool = False) -> int:
    """Rows in the ledger, read from a node that accepts writes (after a failover, the new primary:
    waited for, bounded, so a promotion still under way is not read as data lost); ``empty``
    empties it afterwards, for the next trial."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    extra = {"passfile": str(passfile)} if passfile is not None else {}
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conninfo = make_conninfo(url, connect_timeout=str(CONNECT_TIMEOUT_S), **extra)
            with psycopg.connect(conninfo, autocommit=True) as conn:
                row = conn.execute("SELECT count(*) FROM caplab_ledger").fetchone()
                if empty:
                    conn.execute("TRUNCATE caplab_ledger")
                return int(str(row[0])) if row else 0
        except psycopg.OperationalError as e:
            if time.monotonic() >= deadline:
                raise DatabaseProblem(f"counting the ledger at {shown_url(url)}: {_first_line(e)}") from None
            time.sleep(0.5)


def _scale(conn: psycopg.Connection[tuple[object, ...]], where: str) -> int:
    """pgbench's scale factor: its branches table has one row per unit of scale."""
    import psycopg

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


def with_passfile_under(url: str, directory: Path) -> str:
    """The URL with a relative ``passfile=`` made absolute under ``directory`` (the study's), so it
    means the same file whatever directory caplab runs from."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return url
    passfile = params.get("passfile")
    if not passfile or Path(str(passfile)).is_absolute():
        return url
    return make_conninfo(url, passfile=str(directory / str(passfile)))
