"""Issue 31: caplab installed from its release wheel into a virtual environment of its own, run from
a private working directory (``mktemp -d``, mode 0700, as root) where the servers' unprivileged
users cannot enter. ``caplab studies list`` shows the six built-in studies, and a built-in server
study completes every cell: its servers keep their data in the cell's runtime directory
(``{runtime}``), which is gone afterwards, while the results and the report stay in the working
directory.

The availability-groups quick study, cut to its switchover cell with 4 databases and one trial (so
the test stays near a minute; the whole quick study runs in test_study_availability_groups), on
free ports of its own rather than the study's 7600/7601. The wheel takes seconds: Cargo reuses
`make dev`'s release build and uv its cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from support.studies import free_ports, json_out
from support.wheel import install_wheel, user_environment

pytestmark = pytest.mark.slow  # a real PostgreSQL pair built, loaded and switched over


@pytest.fixture
def private_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="caplab-private-"))
    directory.chmod(0o700)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def runtime_top(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime top directory of this test's own (the default is shared with other runs)."""
    parent = Path(tempfile.mkdtemp(prefix="caplab-runtime-test-", dir="/var/tmp"))
    parent.chmod(0o755)
    top = parent / "run"
    monkeypatch.setenv("CAPLAB_RUNTIME_DIR", str(top))
    yield top
    shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` of a virtual environment holding the wheel built from this checkout."""
    return install_wheel(tmp_path_factory.mktemp("wheel"))


def user_caplab(
    bin_dir: Path, *args: str | Path, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`caplab ARGS…` as a user with the wheel installed runs it: nothing of the checkout."""
    return subprocess.run(
        [str(bin_dir / "caplab"), *map(str, args)],
        cwd=cwd,
        env=user_environment(bin_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def cut_down(path: Path, port: int) -> None:
    text = path.read_text().replace("7600", str(port)).replace("7601", str(port + 1))
    text = text.replace("--databases 20", "--databases 4")
    study = yaml.safe_load(text)
    study["target"]["postgres"]["databases"]["count"] = 4
    study["factors"] = {"zip": {"traffic": ["0%"], "action": ["switchover"]}}
    study["load"]["repeat"] = 1
    path.write_text(yaml.safe_dump(study, sort_keys=False))


@pytest.mark.skipif(os.geteuid() != 0, reason="the servers run as another user only when caplab is root")
def test_the_installed_wheel_runs_a_server_study_from_a_private_directory_and_leaves_no_runtime_behind(
    installed: Path, private_dir: Path, runtime_top: Path
) -> None:
    listed = user_caplab(installed, "studies", "list", "--json", cwd=private_dir)
    assert listed.returncode == 0, listed.stderr
    assert len(json_out(listed)) == 6
    copied = user_caplab(installed, "studies", "copy", "availability-groups", "ag", cwd=private_dir)
    assert copied.returncode == 0, copied.stderr
    study = private_dir / "ag" / "quick.yaml"
    cut_down(study, free_ports(2))
    done = user_caplab(
        installed, "run", study, "--json", "-o", private_dir / "report", cwd=private_dir, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = json_out(done)["cells"]
    assert [c["status"] for c in cells] == ["complete"], [c.get("reason") for c in cells]
    failover = cells[0]["metrics"]["failover"]
    assert len(failover) == 1 and failover[0]["recovery"]["group_s"] is not None
    # results and report in the working directory; the servers' data nowhere in it
    assert (private_dir / "report" / "report.md").exists()
    assert (private_dir / "caplab.db").exists()
    assert not any(private_dir.rglob("pgpair.json")) and not any(private_dir.rglob("PG_VERSION"))
    # the runtime top directory is there (made 1777 on first use), and nothing in it
    assert runtime_top.is_dir() and runtime_top.stat().st_mode & 0o7777 == 0o1777
    assert list(runtime_top.iterdir()) == []
