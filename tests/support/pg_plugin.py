"""pytest plugin (registered in tests/conftest.py): ``postgres_url``, the session's PostgreSQL.

``$CAPLAB_TEST_PG_URL``, if set, is used as it is (a database where the tests may create schemas);
otherwise a throwaway server is started on first use (support/postgres.py) and removed at the end
of the session. Without PostgreSQL's server binaries the tests that need it skip, unless
``$CAPLAB_REQUIRE_PG=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from caplab.systems.pgpair.server import ServerError
from support.postgres import start_postgres

URL_ENV = "CAPLAB_TEST_PG_URL"
REQUIRE_ENV = "CAPLAB_REQUIRE_PG"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL (with a random password) whose database the tests may create schemas in."""
    given = os.environ.get(URL_ENV)
    if given:
        yield given
        return
    try:
        server = start_postgres()
    except ServerError as e:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"PostgreSQL required ({REQUIRE_ENV}=1) but it could not start: {e}")
        pytest.skip(f"no PostgreSQL for the tests: {e}")
    try:
        yield server.url
    finally:
        server.stop()
