"""The SQLite store's placement, in process: what goes in which directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from caplab.systems.idsync.store import Placement, Store
from support.require import TOOLS, require


def test_data_change_log_and_temp_files_each_go_to_their_directory(tmp_path: Path) -> None:
    placement = Placement(tmp_path / "data", tmp_path / "log", tmp_path / "temp")
    with Store(None, placement) as store:
        assert store.scalar("PRAGMA temp_store_directory") == str((tmp_path / "temp").resolve())
        assert store.scalar("PRAGMA journal_mode") == "delete"
        with store.transaction():
            store.log_changes([("staged", "ldap", "uid=a", None)])
    assert (tmp_path / "data" / "idsync.db").exists()
    assert (tmp_path / "log" / "idsync-log.db").exists()
    assert not (tmp_path / "data" / "idsync-log.db").exists()


def test_a_large_sort_spills_into_the_temp_directory(tmp_path: Path) -> None:
    """Seen from the system calls: the temp file SQLite creates (and unlinks at once) is opened in
    the temp directory, not in /var/tmp."""
    require(TOOLS, [] if shutil.which("strace") else ["strace is not installed (apt-get install strace)"])
    script = f"""
from pathlib import Path
from caplab.systems.idsync.store import Placement, Store
with Store(None, Placement(Path({str(tmp_path / "data")!r}), None, Path({str(tmp_path / "temp")!r}))) as s:
    s.execute("PRAGMA cache_size=-100")
    s.execute("CREATE TABLE t (x, y)")
    with s.transaction():
        s.executemany("INSERT INTO t VALUES (?, ?)", [(i * 7919 % 100003, "x" * 100) for i in range(50000)])
    assert len(s.rows("SELECT * FROM t ORDER BY x")) == 50000
"""
    trace = tmp_path / "trace"
    done = subprocess.run(
        ["strace", "-f", "-e", "trace=openat", "-o", str(trace), sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    opened = [line for line in trace.read_text().splitlines() if "etilqs_" in line and "ENOENT" not in line]
    assert opened and all(str(tmp_path / "temp") in line for line in opened)
