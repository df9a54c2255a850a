"""Passwords in database URLs never reach a terminal, an export or a stored field."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from caplab.cli.store import cmd_export, cmd_ls, cmd_show
from caplab.engine import RunResult
from caplab.store import Store, redact_url
from caplab.store.connect import open_engine
from caplab.store.schema import metadata
from caplab.store.urls import scrub
from support.stores import fill


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://caplab:s3cret@db:5432/caplab", "postgresql://caplab:***@db:5432/caplab"),
        ("postgresql+psycopg://u:p%40ss@h/d", "postgresql+psycopg://u:***@h/d"),
        ("postgresql://u:p@ss@h/d", "postgresql://u:***@h/d"),
        ("postgresql://u@h/d", "postgresql://u@h/d"),
        ("sqlite:///caplab.db", "sqlite:///caplab.db"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_masks_every_url_password_in_free_text() -> None:
    text = 'db=postgresql://a:pw1@h/x {"u":"mysql://b:pw2@h","other":"c@d"} http://h:8080/p@q'
    assert scrub(text) == 'db=postgresql://a:***@h/x {"u":"mysql://b:***@h","other":"c@d"} http://h:8080/p@q'


def _everything_stored(url: str) -> str:
    """Every text value of every row of every table, as one string."""
    engine = open_engine(url)
    parts: list[str] = []
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(sa.select(table)):
                parts.extend(str(v) for v in row)
    engine.dispose()
    return "\n".join(parts)


def test_no_output_or_stored_field_holds_the_password(
    pg_url: str, run_result: RunResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password = sa.make_url(pg_url).password
    assert password  # the session's server always has one (random)
    environment: dict[str, object] = {"store": pg_url, "argv": ["caplab", "run", "--db", pg_url]}
    with Store(pg_url) as store:
        assert password not in store.url and password not in repr(store)
        filled = fill(store, run_result, environment)
        store.add_event(filled.study_id, "note", f"connected to {pg_url}")
        store.set_cell_status(filled.cell_ids[1], "failed", error=f"could not reach {pg_url}")
    assert password not in _everything_stored(pg_url)

    ref = str(filled.study_id)
    codes = [
        cmd_ls(pg_url, False),
        cmd_ls(pg_url, True),
        cmd_show(pg_url, ref, False),
        cmd_show(pg_url, ref, True),
        cmd_export(pg_url, ref, "json", None),
        cmd_export(pg_url, ref, "csv", tmp_path / "csv"),
        cmd_export(pg_url, ref, "parquet", tmp_path / "parquet"),
        cmd_show(pg_url, "999999", False),
    ]
    assert codes == [0, 0, 0, 0, 0, 0, 0, 1]
    out, err = capsys.readouterr()
    assert "caplab:***@" in out
    assert password not in out and password not in err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert password.encode() not in path.read_bytes(), path
