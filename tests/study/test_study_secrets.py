"""Passwords in a study (a factor, the SUT's command line, the SUT's own output) are masked in
everything `caplab run` stores and prints."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from caplab.store import Store
from support.studies import caplab, free_port, json_out, write_study

pytestmark = pytest.mark.slow  # whole studies, end to end

PASSWORD = "s3cret-Pw"
DSN = f"postgresql://app:{PASSWORD}@db.example/orders"


@dataclass
class Ran:
    as_json: subprocess.CompletedProcess[str]
    as_table: subprocess.CompletedProcess[str]
    db_url: str
    report: Path


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    tmp = tmp_path_factory.mktemp("study-secrets")
    port = free_port()
    study = {
        "name": "secrets",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        # The SUT repeats its connection string and fails: the reason quotes its output.
        "sut": {"start": "echo connecting to {dsn}; exit 3", "ready": {"port": port, "timeout": "10s"}},
        "factors": {"dsn": [DSN]},
        "load": {"rate": 10, "duration": "1s"},
    }
    path = write_study(tmp / "study.yaml", study)
    db_url = f"sqlite:///{tmp / 'caplab.db'}"
    as_json = caplab("run", path, "--db", db_url, "--json")
    as_table = caplab("run", path, "--db", db_url, "-o", tmp / "report")
    for done in (as_json, as_table):
        assert done.returncode == 1, done.stderr
    return Ran(as_json, as_table, db_url, tmp / "report")


def test_the_json_document_masks_the_password(ran: Ran) -> None:
    assert PASSWORD not in ran.as_json.stdout
    doc = json_out(ran.as_json)
    [cell] = doc["cells"]
    assert cell["factors"] == {"dsn": "postgresql://app:***@db.example/orders"}
    assert "connecting to postgresql://app:***@db.example/orders" in cell["error"]
    assert "app:***@" in doc["study"]["spec"]


def test_the_summary_table_masks_the_password(ran: Ran) -> None:
    assert PASSWORD not in ran.as_table.stdout
    assert "stored as study" in ran.as_table.stdout


def test_the_store_and_its_commands_mask_the_password(ran: Ran) -> None:
    with Store(ran.db_url) as store:
        for row in store.list_studies():
            assert PASSWORD not in repr(store.study_document(row.id))
    shown = caplab("show", "latest", "--db", ran.db_url, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "connecting to postgresql://app:***@" in shown.stdout
    assert PASSWORD not in shown.stdout + shown.stderr


def test_the_progress_on_stderr_masks_the_password(ran: Ran) -> None:
    assert PASSWORD not in ran.as_json.stderr
    assert PASSWORD not in ran.as_table.stderr


def test_the_report_masks_the_password(ran: Ran) -> None:
    written = [p for p in ran.report.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"index.html", "report.md", "results.json"}
    for p in written:
        assert PASSWORD.encode() not in p.read_bytes(), p
    assert "app:***@db.example" in (ran.report / "results.json").read_text()
