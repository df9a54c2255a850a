"""The migrated schema is the one schema.py declares, on both databases; opening is idempotent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from caplab.store import Store
from caplab.store.connect import open_engine
from caplab.store.errors import StoreError
from caplab.store.migrate import HEAD, _config, current_revision, head_revision
from caplab.store.schema import metadata


def test_migrations_build_exactly_the_declared_schema(store_url: str) -> None:
    Store(store_url).close()
    engine = open_engine(store_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        diffs = compare_metadata(context, metadata)
    engine.dispose()
    assert diffs == []


def test_a_new_store_is_at_head_and_reopening_changes_nothing(store_url: str) -> None:
    with Store(store_url) as store:
        study_id = store.create_study("s", "name: s", "s.yaml", {})
    engine = open_engine(store_url)
    assert current_revision(engine) == head_revision()
    with Store(store_url) as store:
        assert [s.id for s in store.list_studies()] == [study_id]
    engine.dispose()


def test_head_names_the_newest_script_and_a_store_at_head_opens_without_alembic(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert head_revision() == HEAD, "a new migration is also named in migrate.HEAD"
    Store(sqlite_url).close()
    # A fresh interpreter: this one imported Alembic above.
    probe = (
        "import sys\nfrom caplab.store import Store\n"
        f"Store({sqlite_url!r}).close()\nprint('alembic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


def test_a_store_from_a_newer_caplab_is_refused_with_a_clear_message(sqlite_url: str) -> None:
    Store(sqlite_url).close()
    engine = open_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreError, match="revision 9999, newer than this caplab"):
        Store(sqlite_url)


def test_sqlite_runs_in_wal_mode_with_foreign_keys(sqlite_url: str) -> None:
    with Store(sqlite_url) as store:
        store.create_study("s", "name: s", "s.yaml", {})
    engine = open_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_the_default_store_is_caplab_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CAPLAB_DB", raising=False)
    with Store() as store:
        assert store.url == "sqlite:///caplab.db"
    assert (tmp_path / "caplab.db").exists()
    monkeypatch.setenv("CAPLAB_DB", f"sqlite:///{tmp_path / 'other.db'}")
    with Store() as store:
        assert store.url.endswith("other.db")


def test_an_unreachable_database_is_a_store_error_naming_the_redacted_url() -> None:
    with pytest.raises(StoreError) as caught:
        Store("postgresql://caplab:hunter2@127.0.0.1:1/nothing")
    assert "postgresql://caplab:***@127.0.0.1:1/nothing" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def old_study(conn: sa.Connection, revision: str) -> None:
    """A store migrated only to ``revision``, holding one study written then (named ``old``)."""
    cfg = _config()
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, revision)
    conn.execute(
        sa.text(
            "INSERT INTO studies (name, status, spec_text, spec_path, environment, caplab_version, "
            "created_at) VALUES ('old', 'complete', 'name: old', 'old.yaml', '{}', '0', CURRENT_TIMESTAMP)"
        )
    )


def test_a_store_at_the_first_revision_gains_the_validated_study(store_url: str) -> None:
    """A store written before the validated study was kept opens, keeps its studies (with none),
    and stores one for the studies created afterwards."""
    engine = open_engine(store_url)
    with engine.begin() as conn:
        old_study(conn, "0001")
    assert current_revision(engine) == "0001"
    engine.dispose()
    with Store(store_url) as store:
        (old,) = store.list_studies()
        assert store.study_document(old.id).study.validated is None
        new = store.create_study("new", "name: new", "new.yaml", {}, validated={"load": {"duration": 30.0}})
        assert store.study_document(new).study.validated == {"load": {"duration": 30.0}}
    engine = open_engine(store_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_a_store_before_one_numbering_gets_its_failover_trials_from_zero(store_url: str) -> None:
    """Failover entries were stored 1-based, recovery and ledger entries 0-based; revision 0003
    renumbers the failover entries of cells stored before it, and leaves the others as they were."""
    engine = open_engine(store_url)
    with engine.begin() as conn:
        old_study(conn, "0002")
        metrics = {
            "failover": [{"trial": 1, "action": "kill"}, {"trial": 2, "action": "kill"}],
            "recovery": [{"trial": 0}, {"trial": 1}],
        }
        conn.execute(
            sa.text(
                "INSERT INTO cells (study_id, idx, factors, status, metrics) "
                "VALUES ((SELECT id FROM studies WHERE name = 'old'), 0, '{}', 'complete', :m)"
            ),
            {"m": json.dumps(metrics)},
        )
    engine.dispose()
    with Store(store_url) as store:
        (old,) = store.list_studies()
        [cell] = store.study_document(old.id).cells
    assert [f["trial"] for f in cell.metrics.parts("failover")] == [0, 1]
    assert [r["trial"] for r in cell.metrics.parts("recovery")] == [0, 1], "already 0-based: untouched"
