"""A real PostgreSQL for the store's tests.

``$CAPLAB_TEST_PG_URL`` if set; otherwise, when the Debian server is installed (``pg_ctlcluster``)
and we may act as its ``postgres`` user, start the first cluster and create (idempotently) the
role ``caplab`` / ``caplab-secret`` and the database ``caplab_test``. Without either the tests skip,
unless ``$CAPLAB_REQUIRE_PG=1`` (CI), where a missing database is a failure rather than a skip.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess

import pytest

ROLE = "caplab"
PASSWORD = "caplab-secret"
DATABASE = "caplab_test"


def _as_postgres() -> list[str] | None:
    """The prefix that runs a command as the ``postgres`` OS user, if we may."""
    if os.geteuid() == 0 and shutil.which("su"):
        return ["su", "postgres", "-c"]
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n", "-u", "postgres", "sh", "-c"]
    return None


def _run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _psql(prefix: list[str], sql: str, port: str, database: str = "postgres") -> str:
    command = f"psql -X -q -t -A -v ON_ERROR_STOP=1 -p {port} -d {database} -c {shlex.quote(sql)}"
    return _run([*prefix, command]).strip()


def provision() -> str:
    """Starts the local Debian cluster and creates the test role and database; returns the URL."""
    if not shutil.which("pg_ctlcluster") or not shutil.which("pg_lsclusters"):
        raise LookupError("no CAPLAB_TEST_PG_URL and no Debian PostgreSQL (pg_ctlcluster) here")
    prefix = _as_postgres()
    if prefix is None:
        raise LookupError("pg_ctlcluster is installed but we cannot act as the postgres user")
    clusters = [line.split() for line in _run(["pg_lsclusters", "--no-header"]).splitlines() if line.strip()]
    if not clusters:
        raise LookupError("pg_lsclusters lists no cluster (pg_createcluster 15 main)")
    version, name, port, status = clusters[0][:4]
    if status != "online":
        _run(["pg_ctlcluster", version, name, "start"])
    create_role = (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') "
        f"THEN CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'; "
        f"ELSE ALTER ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'; END IF; END $$;"
    )
    _psql(prefix, create_role, port)
    if _psql(prefix, f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'", port) != "1":
        _psql(prefix, f"CREATE DATABASE {DATABASE} OWNER {ROLE}", port)
    return f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"


@functools.cache
def _found() -> tuple[str | None, str]:
    """(URL, '') or (None, why not); cached so provisioning runs once per session."""
    url = os.environ.get("CAPLAB_TEST_PG_URL")
    if url:
        return url, ""
    try:
        return provision(), ""
    except (LookupError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)


def postgres_url() -> str:
    """A PostgreSQL URL the tests may create schemas in; skips (or fails under CI) without one."""
    url, why = _found()
    if url is None:
        if os.environ.get("CAPLAB_REQUIRE_PG") == "1":
            pytest.fail(f"PostgreSQL required (CAPLAB_REQUIRE_PG=1) but unavailable: {why}")
        pytest.skip(f"no PostgreSQL: {why}")
    return url
