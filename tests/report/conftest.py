"""The session's store for the report tests: see support/reports.py for the two studies in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from caplab.store.reading import SampleRow
from support.reports import (
    STUDY_TIMEOUT_S,
    Built,
    Written,
    caplab,
    fixed_study,
    free_port,
    scaleout_study,
    write_report_cli,
    write_study,
)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("report")
    db_url = f"sqlite:///{tmp / 'caplab.db'}"
    # `caplab run` writes the first study's report itself; `caplab report latest` the second's.
    path = write_study(tmp / "scaleout.yaml", scaleout_study(free_port()))
    done = caplab("run", path, "--db", db_url, "--report-dir", tmp / "scaleout", timeout=STUDY_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    scaleout = Written(done, tmp / "scaleout", json.loads((tmp / "scaleout" / "results.json").read_text()))
    path = write_study(tmp / "fixed.yaml", fixed_study(free_port()))
    done = caplab("run", path, "--db", db_url, "--report-dir", tmp / "fixed-run", timeout=STUDY_TIMEOUT_S)
    assert done.returncode == 1, done.stderr  # the failing cell, by design; the others complete
    return Built(db_url, tmp, scaleout, write_report_cli(db_url, "latest", tmp / "fixed"))


@pytest.fixture(scope="session")
def study_document(built: Built) -> dict[str, Any]:
    """Study 1 as the store holds it, for tests that vary it before building a report."""
    from caplab.store import Store

    with Store(built.db_url) as store:
        return cast(dict[str, Any], store.study_document(1).to_json())


@pytest.fixture(scope="session")
def study_samples(built: Built) -> list[SampleRow]:
    from caplab.store import Store

    with Store(built.db_url) as store:
        return store.resource_samples(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every report test reads the two studies the session runs first: end to end, so slow."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)
