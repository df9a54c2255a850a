"""idsync end to end against a real slapd on loopback: what stage and sync leave in the store and in
the directory, counted by the store and by slapd itself. Every directory started here is stopped
at teardown, also when a test fails."""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from caplab.collect.prometheus import parse_exposition
from support.idsync import StoreDirs, answer, free_port, idsync, ldap_count, ldap_entry, require_slapd

pytestmark = pytest.mark.slow  # real servers seeded and driven end to end

PEOPLE = 2000
PEOPLE_BASE = "ou=people,dc=idsync,dc=test"
EXPORT_BASE = "ou=export,dc=idsync,dc=test"


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A slapd seeded with PEOPLE people of 25 attributes, shared by this module's tests."""
    require_slapd()
    home = tmp_path_factory.mktemp("directory")
    idsync("directory", "start", "--data-dir", home, "--port", free_port())
    try:
        seeded = answer("seed", "--data-dir", home, "--objects", PEOPLE, "--attributes", 25)
        assert seeded["objects"] == PEOPLE
        yield home
    finally:
        idsync("directory", "stop", "--data-dir", home, check=False)


def test_stage_puts_exactly_the_directorys_people_in_the_connector_space(
    directory: Path, tmp_path: Path
) -> None:
    store = StoreDirs(tmp_path)
    assert ldap_count(directory, PEOPLE_BASE) == PEOPLE
    staged = answer("run", "stage", "--data-dir", directory, *store.options)
    assert staged["objects"] == PEOPLE
    assert answer("counts", *store.options)["connector_space"] == PEOPLE


def test_staging_again_changes_nothing_and_sync_then_has_nothing_new(directory: Path, tmp_path: Path) -> None:
    store = StoreDirs(tmp_path)
    answer("run", "stage", "--source", "ldap", "--data-dir", directory, *store.options)
    assert answer("run", "sync", "--export", "none", *store.options)["synced"] == PEOPLE
    again = answer("run", "stage", "--data-dir", directory, *store.options)
    assert again["objects"] == PEOPLE
    counts = answer("counts", *store.options)
    assert (counts["connector_space"], counts["metaverse"]) == (PEOPLE, PEOPLE)
    assert answer("run", "sync", "--export", "none", *store.options)["synced"] == 0
    counters = parse_exposition(idsync("metrics", *store.options).stdout)
    assert counters["idsync_objects_staged_total"] == 2 * PEOPLE
    assert counters["idsync_objects_synced_total"] == PEOPLE


def test_sync_projects_every_person_and_exports_them_to_the_second_subtree(
    directory: Path, tmp_path: Path
) -> None:
    store = StoreDirs(tmp_path)
    answer("run", "stage", "--data-dir", directory, *store.options)
    synced = answer("run", "sync", "--data-dir", directory, "--export", "ldap", *store.options)
    assert (synced["synced"], synced["projected"], synced["joined"]) == (PEOPLE, PEOPLE, 0)
    counts = answer("counts", "--data-dir", directory, *store.options)
    assert (counts["metaverse"], counts["export"], counts["export_pending"]) == (PEOPLE, PEOPLE, 0)
    assert counts["directory"] == {"people": PEOPLE, "export": PEOPLE}
    assert ldap_count(directory, EXPORT_BASE) == PEOPLE
    exported = ldap_entry(directory, f"employeeNumber=E00000007,{EXPORT_BASE}")
    assert (
        exported["displayName"] == "Given7 Family7"
    )  # the computed flow, not the source's "Family7, Given7"
    assert exported["mail"] == "u0000007@example.test"
    counters = parse_exposition(idsync("metrics", *store.options).stdout)
    assert counters["idsync_objects_exported_total"] == PEOPLE
    idsync("reset", "--data-dir", directory, *store.options)
    assert ldap_count(directory, EXPORT_BASE) == 0  # the next run exports into an empty subtree
    assert ldap_count(directory, PEOPLE_BASE) == PEOPLE


def test_store_files_go_to_their_own_directories(directory: Path, tmp_path: Path) -> None:
    store = StoreDirs(tmp_path)
    answer("run", "stage", "--data-dir", directory, *store.options)
    assert (tmp_path / "data" / "idsync.db").stat().st_size > 0
    assert (tmp_path / "log" / "idsync-log.db").stat().st_size > 0
    assert not (tmp_path / "data" / "idsync-log.db").exists()
    idsync("reset", *store.options)
    assert answer("counts", *store.options) == {
        "connector_space": 0, "metaverse": 0, "export": 0, "export_pending": 0,
    }  # fmt: skip


def test_a_wrong_bind_password_is_a_clear_error(directory: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-password")
    store = StoreDirs(tmp_path)
    done = idsync(
        "run", "stage", "--data-dir", directory, "--bind-password-file", wrong, *store.options, check=False
    )
    assert done.returncode == 1
    assert "refused the bind as cn=admin,dc=idsync,dc=test: invalid credentials" in done.stderr
    assert "Traceback" not in done.stderr and "not-the-password" not in done.stderr


def test_the_password_is_kept_private_and_never_in_the_configuration(directory: Path) -> None:
    password = (directory / "rootpw").read_text()
    assert (directory / "rootpw").stat().st_mode & 0o777 == 0o600
    assert (directory / "slapd.conf").stat().st_mode & 0o777 == 0o600
    assert password not in (directory / "slapd.conf").read_text()
    again = idsync("directory", "start", "--data-dir", directory, check=False)
    assert again.returncode == 1 and "already running" in again.stderr


def test_the_csv_source_stages_and_syncs_to_a_csv_export(tmp_path: Path) -> None:
    people, exported = tmp_path / "people.csv", tmp_path / "out" / "export.csv"
    answer("seed", "--csv", people, "--objects", 1500, "--attributes", 25)
    store = StoreDirs(tmp_path)
    assert answer("run", "stage", "--source", f"csv:{people}", *store.options)["objects"] == 1500
    assert answer("run", "sync", "--export", f"csv:{exported}", *store.options)["exported"] == 1500
    with exported.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1500 and rows[0]["employeeNumber"] == "E00000001"
    counts = answer("counts", *store.options)
    assert (counts["connector_space"], counts["metaverse"], counts["export"]) == (1500, 1500, 1500)


def test_metrics_are_served_while_runs_come_and_go(tmp_path: Path) -> None:
    people = tmp_path / "people.csv"
    answer("seed", "--csv", people, "--objects", 300)
    store = StoreDirs(tmp_path)
    server = subprocess.Popen(
        [sys.executable, "-m", "caplab.systems.idsync", "metrics", "--serve", "0", *map(str, store.options)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().split()[1]
        answer("run", "stage", "--source", f"csv:{people}", *store.options)
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
            scraped = parse_exposition(response.read().decode())
        assert scraped["idsync_objects_staged_total"] == 300
        assert scraped["idsync_connector_space_objects"] == 300
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_usage_mistakes_are_one_line_each(tmp_path: Path) -> None:
    done = idsync("run", "stage", "--source", "ftp:x", "--data", tmp_path, check=False)
    assert done.returncode == 1 and "--source must be ldap, csv:FILE or postgresql://" in done.stderr
    done = idsync("counts", "--store", "postgresql://u:secret@127.0.0.1:1/x", "--data", tmp_path, check=False)
    assert done.returncode == 1 and "placement is the server's" in done.stderr and "secret" not in done.stderr
    done = idsync("seed", "--objects", 10, "--attributes", 40, "--csv", tmp_path / "p.csv", check=False)
    assert done.returncode == 1 and "--attributes must be 4…32" in done.stderr


def test_the_store_and_the_source_can_be_postgresql(pg_url: str, tmp_path: Path) -> None:
    exported = tmp_path / "export.csv"
    answer("seed", "--sql", pg_url, "--objects", 1000)
    idsync("reset", "--store", pg_url)
    assert answer("run", "stage", "--source", pg_url, "--store", pg_url)["objects"] == 1000
    assert answer("run", "stage", "--source", pg_url, "--store", pg_url)["objects"] == 1000
    assert answer("run", "sync", "--export", f"csv:{exported}", "--store", pg_url)["synced"] == 1000
    counts = answer("counts", "--store", pg_url)
    assert (counts["connector_space"], counts["metaverse"], counts["export"]) == (1000, 1000, 1000)
    assert (
        parse_exposition(idsync("metrics", "--store", pg_url).stdout)["idsync_objects_staged_total"] == 2000
    )


def test_exporting_into_a_subtree_that_already_holds_the_people_replaces_them(
    directory: Path, tmp_path: Path
) -> None:
    first, second = StoreDirs(tmp_path / "first"), StoreDirs(tmp_path / "second")
    idsync("reset", "--data-dir", directory, *first.options)
    for store in (first, second):  # the second store knows nothing of what the first exported
        answer("run", "stage", "--data-dir", directory, *store.options)
        assert answer("run", "sync", "--data-dir", directory, *store.options)["exported"] == PEOPLE
    assert answer("counts", "--data-dir", directory, *second.options)["directory"]["export"] == PEOPLE


def test_a_port_already_taken_is_a_clear_error(tmp_path: Path) -> None:
    require_slapd()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = idsync("directory", "start", "--data-dir", tmp_path, "--port", port, check=False)
    assert done.returncode == 1
    assert (
        "slapd exited with status 1: daemon: bind(6) failed errno=98 (Address already in use)" in done.stderr
    )


def test_a_deferred_sync_provisions_and_export_writes_later(directory: Path, tmp_path: Path) -> None:
    store, exported = StoreDirs(tmp_path), tmp_path / "export.csv"
    idsync("reset", "--data-dir", directory, *store.options)
    answer("run", "stage", "--data-dir", directory, *store.options)
    targets = ["--export", "ldap", "--export", f"csv:{exported}"]
    synced = answer("run", "sync", "--defer", "--data-dir", directory, *targets, *store.options)
    assert (synced["synced"], synced["exported"]) == (PEOPLE, 0)
    counts = answer("counts", "--data-dir", directory, *store.options)
    assert (counts["export"], counts["export_pending"], counts["directory"]["export"]) == (0, 2 * PEOPLE, 0)
    assert not exported.exists()
    assert answer("run", "export", "--data-dir", directory, *targets, *store.options)["objects"] == 2 * PEOPLE
    counts = answer("counts", "--data-dir", directory, *store.options)
    assert (counts["export"], counts["export_pending"], counts["directory"]["export"]) == (
        2 * PEOPLE,
        0,
        PEOPLE,
    )
    assert len(exported.read_text().splitlines()) == PEOPLE + 1
