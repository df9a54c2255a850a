"""`caplab ls / show / export` as the CLI calls them: output, files and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from caplab.cli.store import cmd_export, cmd_ls, cmd_show
from caplab.engine import RunResult
from caplab.store import Store
from support.stores import Filled, same_json


@pytest.mark.slow
def test_ls_lists_studies_as_a_table_and_as_json(
    store: Store, store_url: str, filled: Filled, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_ls(store_url, False) == 0
    out = capsys.readouterr().out
    assert "checkout" in out and "failed" in out and "1/2" in out
    assert cmd_ls(store_url, True) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row | {"created_at": None, "finished_at": None} == {
        "id": filled.study_id,
        "name": "checkout",
        "status": "failed",
        "created_at": None,
        "finished_at": None,
        "cells_total": 2,
        "cells_complete": 1,
    }


def test_ls_on_an_empty_store_says_so(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    Store(sqlite_url).close()
    assert cmd_ls(sqlite_url, False) == 0
    assert "no studies in" in capsys.readouterr().out
    assert cmd_ls(sqlite_url, True) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_reading_a_missing_sqlite_store_fails_without_creating_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    assert cmd_ls(url, False) == 1
    assert cmd_show(url, "latest", False) == 1
    assert cmd_export(url, "latest", "json", None) == 1
    err = capsys.readouterr().err
    assert err.count("caplab: no results store at") == 3
    assert not (tmp_path / "none.db").exists()


def test_show_prints_the_cells_their_figures_errors_and_events(
    store: Store, store_url: str, filled: Filled, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_show(store_url, "latest", False) == 0
    out = capsys.readouterr().out
    assert f"Study {filled.study_id}" in out and "checkout" in out
    assert "workers" in out and "complete" in out and "Throughput/s" in out
    assert "cell 1: SUT exited with status 3" in out
    assert "cell_failed" in out


def test_show_json_is_the_study_document(
    store: Store, store_url: str, filled: Filled, run_result: RunResult, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_show(store_url, str(filled.study_id), True) == 0
    doc = json.loads(capsys.readouterr().out)
    # The stored document plus the scaling fits and the findings derived from it (none: no
    # numeric factor here, no findings in the file).
    assert doc.pop("scaling") == [] and doc.pop("findings") == []
    assert same_json(doc, store.study_document(filled.study_id).to_json())
    trial = doc["cells"][0]["trials"][0]
    del trial["trial"]
    assert same_json(trial, run_result.raw)


def test_show_an_unknown_study_is_exit_1_with_a_message(
    store: Store, store_url: str, filled: Filled, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_show(store_url, "4242", False) == 1
    assert cmd_show(store_url, "no-such-name", True) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "caplab: no study 4242 in" in captured.err and "'no-such-name'" in captured.err


def test_export_csv_and_parquet_write_the_tables(
    store: Store, store_url: str, filled: Filled, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tables = ["cells", "trials", "intervals", "resources"]
    assert cmd_export(store_url, "latest", "csv", tmp_path / "csv") == 0
    assert cmd_export(store_url, "latest", "parquet", str(tmp_path / "pq")) == 0
    for name in tables:
        from_csv = pd.read_csv(tmp_path / "csv" / f"{name}.csv")
        from_parquet = pd.read_parquet(tmp_path / "pq" / f"{name}.parquet")
        assert list(from_csv.columns) == list(from_parquet.columns)
        assert len(from_csv) == len(from_parquet)
    cells = pd.read_csv(tmp_path / "csv" / "cells.csv")
    assert list(cells["workers"]) == [1, 2] and list(cells["status"]) == ["complete", "failed"]
    about = json.loads((tmp_path / "pq" / "study.json").read_text())
    assert about["study"]["id"] == filled.study_id and about["factors"] == ["workers"]
    assert "exported study" in capsys.readouterr().err


def test_export_json_goes_to_stdout_or_to_a_file(
    store: Store, store_url: str, filled: Filled, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_export(store_url, "latest", "json", None) == 0
    on_stdout = json.loads(capsys.readouterr().out)
    assert cmd_export(store_url, "latest", "json", tmp_path / "study.json") == 0
    assert json.loads((tmp_path / "study.json").read_text()) == on_stdout
    assert same_json(on_stdout, store.study_document(filled.study_id).to_json())


def test_export_refuses_a_bad_format_and_a_file_where_a_directory_should_be(
    store: Store, store_url: str, filled: Filled, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_export(store_url, "latest", "xml", None) == 2
    (tmp_path / "taken").write_text("x")
    assert cmd_export(store_url, "latest", "csv", tmp_path / "taken") == 1
    err = capsys.readouterr().err
    assert "--format must be one of csv, parquet, json" in err and "is not a directory" in err


def test_export_defaults_to_a_directory_named_after_the_study(
    store: Store, store_url: str, filled: Filled, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cmd_export(store_url, "latest", "csv", None) == 0
    assert (tmp_path / f"study-{filled.study_id}" / "intervals.csv").exists()


@pytest.mark.slow
def test_a_piped_table_keeps_whole_names(sqlite_url: str) -> None:
    """`caplab ls | grep NAME`: a table written to a pipe is never cut to 80 columns."""
    long_name = "known-server-two-hosts-with-a-very-long-study-name-indeed"
    with Store(sqlite_url) as store:
        store.create_study(long_name, "name: x\n", "study.yaml", {})
    out = subprocess.run(
        [sys.executable, "-m", "caplab", "ls", "--db", sqlite_url],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "80"},
    ).stdout
    assert long_name in out
