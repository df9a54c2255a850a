"""Fixtures for the study tests: a SQLite results store in the test's temporary directory, and a
directory the reference systems' unprivileged server users can enter."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'caplab.db'}"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """PostgreSQL and slapd run as an unprivileged user when the tests run as root: their data must
    be reachable, which pytest's tmp_path (under root's 0700 directory) is not."""
    directory = Path(tempfile.mkdtemp(prefix="caplab-test-shared-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
