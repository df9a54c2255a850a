"""Fixtures for the study tests: a SQLite results store in the test's temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'caplab.db'}"
