"""Fixtures for msgbus: the whole system started as real processes on free loopback ports,
stopped at teardown; and the PostgreSQL URL for the store's PostgreSQL variant."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caplab.systems import msgbus
from caplab.systems.msgbus import RunningMsgbus
from support.msgbus_client import Start


@pytest.fixture
def start_msgbus(tmp_path: Path) -> Iterator[Start]:
    """``start(hosts, stores, **options)`` with a data dir and a sink log under ``tmp_path``
    (``running.sink_log``); every system started is stopped at teardown."""
    started: list[RunningMsgbus] = []

    def start(hosts: int = 1, stores: int = 1, **options: Any) -> RunningMsgbus:
        n = len(started)
        options.setdefault("data_dir", tmp_path / f"data{n}")
        options.setdefault("sink_log", tmp_path / f"sink{n}.log")
        running = msgbus.start(hosts, stores, **options)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def pg_url() -> str:
    """``$CAPLAB_TEST_PG_URL`` (a database where schemas may be created); skips without it unless
    ``$CAPLAB_REQUIRE_PG=1``, where its absence is a failure."""
    url = os.environ.get("CAPLAB_TEST_PG_URL")
    if not url:
        if os.environ.get("CAPLAB_REQUIRE_PG") == "1":
            pytest.fail("CAPLAB_REQUIRE_PG=1 but CAPLAB_TEST_PG_URL is not set")
        pytest.skip("CAPLAB_TEST_PG_URL is not set")
    return url
