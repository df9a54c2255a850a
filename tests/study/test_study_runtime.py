"""The cell's runtime directory (`caplab.study.runtime`): made where the servers' users can reach
it, with the modes that let them (and nobody else) in, filled into the study as ``{runtime}``, and
removed after the cell whatever happened — with what was left running in it."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from caplab.spec import load_study
from caplab.study.plan import plan_cell
from caplab.study.runtime import (
    CELL_MODE,
    RuntimeDirError,
    cell_runtime,
    make_runtime,
    prepare_top,
    remove_runtime,
    sweep_runtime,
)


@pytest.fixture
def top() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="caplab-runtime-unit-", dir="/var/tmp"))
    parent.chmod(0o755)
    yield parent / "run"
    shutil.rmtree(parent, ignore_errors=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_runtime_is_traversable_then_removed_with_what_a_server_user_made_in_it(top: Path) -> None:
    with cell_runtime("cell-1", top) as runtime:
        assert runtime.parent == top
        assert mode(top) == 0o1777 and top.stat().st_mode & stat.S_ISVTX, "as /tmp: sticky"
        assert mode(runtime) == CELL_MODE == 0o711, "enter, not list"
        assert runtime.name.startswith(f"caplab-{os.getpid()}-") and runtime.name.endswith("-cell-1")
        data = runtime / "pair" / "node0"
        data.mkdir(parents=True, mode=0o700)
        (data / "PG_VERSION").write_text("15\n")
        (runtime / "pair" / "primary.pid").symlink_to("/etc/passwd")  # never followed
        if os.geteuid() == 0:  # the server user's own 0700 directory, as PostgreSQL demands
            nobody = pwd.getpwnam("nobody")
            os.chown(data, nobody.pw_uid, nobody.pw_gid)
            os.chown(data / "PG_VERSION", nobody.pw_uid, nobody.pw_gid)
    assert not runtime.exists()
    assert Path("/etc/passwd").exists()
    assert list(top.iterdir()) == []


def test_the_runtime_goes_on_failure_and_on_ctrl_c(top: Path) -> None:
    made: list[Path] = []
    for error in (RuntimeError("the cell failed"), KeyboardInterrupt()):
        with pytest.raises(type(error)), cell_runtime("cell-2", top) as runtime:
            made.append(runtime)
            (runtime / "data").mkdir()
            raise error
    assert made and not any(p.exists() for p in made)


def test_a_server_left_running_in_the_runtime_is_stopped_before_its_files_go(top: Path) -> None:
    runtime = make_runtime("cell-3", top)
    (runtime / "data").mkdir()
    # daemonised, as pg_ctl leaves PostgreSQL: not our child, its working directory its data
    daemon = ["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"]
    spawned = subprocess.run(daemon, cwd=runtime / "data", capture_output=True, text=True, check=True)
    server = psutil.Process(int(spawned.stdout))
    try:
        assert remove_runtime(runtime) == []
        assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE
    finally:
        with contextlib.suppress(psutil.Error):
            server.kill()
    assert not runtime.exists()


def test_a_crashed_runs_runtime_is_swept_and_a_live_ones_kept(top: Path) -> None:
    live = make_runtime("cell-4", top)
    crashed = top / f"caplab-{_dead_pid()}-abc123-cell-4"
    (crashed / "data").mkdir(parents=True)
    done = sweep_runtime(top)
    assert done == [f"removed runtime directory {crashed}"]
    assert live.exists() and not crashed.exists()
    remove_runtime(live)


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_top_directory_someone_else_owns_is_refused(top: Path) -> None:
    top.mkdir(mode=0o755)
    nobody = pwd.getpwnam("nobody")
    os.chown(top, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(RuntimeDirError, match=f"belongs to uid {nobody.pw_uid}"):
        prepare_top(top)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's servers run as another user")
def test_a_top_directory_the_server_users_cannot_reach_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(RuntimeDirError, match=r"cannot enter .*private"):
        prepare_top(private / "run")


def test_a_writable_top_without_the_sticky_bit_is_refused(top: Path) -> None:
    top.mkdir()
    top.chmod(0o777)
    with pytest.raises(RuntimeDirError, match="sticky"):
        prepare_top(top)


def test_runtime_is_filled_into_every_string_of_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        """
name: rt
target:
  postgres:
    url: "postgresql://caplab@127.0.0.1:7600/db?target_session_attrs=read-write"
    workload: tpcb
    passfile: "{runtime}/pair-{action}/pgpass"
sut:
  start: caplab systems start pgpair --data-dir {runtime}/pair-{action} --port 7600
  stop: python -m caplab.systems.pgpair stop --data-dir {runtime}/pair-{action} --remove
  roles:
    primary: {pidfile: "{runtime}/pair-{action}/primary.pid"}
  actions:
    switchover: python -m caplab.systems.pgpair switchover --data-dir {runtime}/pair-{action}
  postgres: ["postgresql://caplab@127.0.0.1:7600/postgres?passfile={runtime}/pair-{action}/pgpass"]
factors: {action: [switchover]}
load: {rate: 10, duration: 4s}
actions: [{at: 1s, do: "{action}"}]
"""
    )
    study = load_study(path)
    plan = plan_cell(study, study.cells[0])
    assert plan.on(None) is plan, "no hardware and no runtime: nothing to fill in"
    bound = plan.on(None, Path("/var/tmp/caplab-run/x"))
    sut = bound.config.sut
    assert sut is not None and bound.config.target is not None and bound.config.target.postgres is not None
    assert (
        sut.start
        == "caplab systems start pgpair --data-dir /var/tmp/caplab-run/x/pair-switchover --port 7600"
    ), "in the SUT's commands"
    assert sut.stop is not None and "/var/tmp/caplab-run/x/pair-switchover --remove" in sut.stop
    assert sut.actions["switchover"].endswith("--data-dir /var/tmp/caplab-run/x/pair-switchover")
    assert [r.pidfile for r in bound.sut.roles] == ["/var/tmp/caplab-run/x/pair-switchover/primary.pid"]
    assert bound.collectors.databases == (
        "postgresql://caplab@127.0.0.1:7600/postgres?passfile=/var/tmp/caplab-run/x/pair-switchover/pgpass",
    )
    assert bound.config.target.postgres.passfile == "/var/tmp/caplab-run/x/pair-switchover/pgpass"
    assert "{runtime}" in str(plan.config.sut), "the unbound plan keeps the placeholder"
