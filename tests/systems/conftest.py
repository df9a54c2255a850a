"""Fixtures for the reference systems: msgbus and hl7 started as real processes on free loopback ports,
the PostgreSQL URL for its store's PostgreSQL variant, and pgpair's primary and standby; all
stopped (and their files deleted) at teardown."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from caplab.systems import hl7, msgbus
from caplab.systems.msgbus import RunningMsgbus
from caplab.systems.pgpair import Pair, PairSettings, ServerError
from support.msgbus_client import Start
from support.pgha import StartCluster, cluster_factory


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
def pg_url(postgres_url: str) -> str:
    """The session's PostgreSQL (support/pg_plugin.py); msgbus makes its own schemas in it."""
    return postgres_url


@pytest.fixture
def start_pair() -> Iterator[Callable[..., Pair]]:
    """``start_pair(**settings)``: a pgpair in a temporary directory every user may enter (the
    servers run as an unprivileged user); each pair is stopped and deleted at teardown."""
    made: list[tuple[Path, Pair | None]] = []

    def start(**settings: Any) -> Pair:
        directory = Path(tempfile.mkdtemp(prefix="caplab-test-pgpair-"))
        directory.chmod(0o755)
        made.append((directory, None))
        pair = Pair.create(PairSettings(data_dir=directory / "pair", **settings))
        made[-1] = (directory, pair)
        return pair

    yield start
    for directory, pair in made:
        if pair is not None:
            with contextlib.suppress(ServerError):
                pair.stop()
            for node in pair.nodes:
                node.kill()
                node.wait_gone()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def start_hl7(tmp_path: Path) -> Iterator[Callable[..., hl7.RunningHl7]]:
    """``start_hl7(channels, **options)`` (see ``caplab.systems.hl7.start``) with its data dir
    under ``tmp_path`` unless given; every engine started is stopped at teardown."""
    started: list[hl7.RunningHl7] = []

    def start(channels: int = 4, **options: Any) -> hl7.RunningHl7:
        data_dir = options.pop("data_dir", tmp_path / f"hl7-{len(started)}")
        running = hl7.start(data_dir, channels, **options)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def start_cluster() -> Iterator[StartCluster]:
    """``start_cluster(**settings)``: a pgha cluster on free ports (support/pgha.py), stopped and
    deleted — namespaces too — at teardown."""
    with cluster_factory() as start:
        yield start
