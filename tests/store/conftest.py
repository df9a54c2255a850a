"""Fixtures for the store: a real engine result, and stores on SQLite (a temporary file) and on a
real PostgreSQL (a fresh schema per test, dropped afterwards, so reruns start clean)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from caplab import engine
from caplab.engine import ClosedLoad, Plan, RequestClass, RunResult, Target
from caplab.store import Store
from caplab.store.urls import engine_url
from caplab.systems.process import start_module
from support.stores import Filled, fill

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def run_result() -> RunResult:
    """One real trial: 1 s closed model, 2 users, two request classes, a warm-up interval."""
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as server:
        plan = Plan(
            target=Target(f"http://{server.address}/"),
            load=ClosedLoad(users=2),
            duration_s=1.0,
            warmup_s=0.25,
            interval_s=0.25,
            requests=(RequestClass("browse", 3.0), RequestClass("buy", 1.0, method="POST", body="x")),
        )
        return engine.run(plan)


@pytest.fixture
def raw_copy(run_result: RunResult) -> Callable[[], dict[str, object]]:
    """A deep copy of the real result's JSON object, for tests that alter it."""
    return lambda: copy.deepcopy(run_result.raw)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'caplab.db'}"


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a schema of its own, dropped after the test."""
    base = postgres_url
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(engine_url(base))
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options=-csearch_path%3D{schema}"
    with admin.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url: str = request.getfixturevalue(name)
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store(store_url) as s:
        yield s


@pytest.fixture
def filled(store: Store, run_result: RunResult) -> Filled:
    return fill(store, run_result)
