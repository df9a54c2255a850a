"""Fixtures for the experiment tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.runs import CAPLAB


@pytest.fixture(scope="session")
def caplab_path() -> Path:
    """The installed `caplab` command, beside this Python."""
    if not CAPLAB.exists():
        pytest.fail("the caplab entry point is not installed (run `make dev`)")
    return CAPLAB
