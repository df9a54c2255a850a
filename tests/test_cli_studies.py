"""`caplab studies`: the built-in studies by name, as a user runs the installed command. The catalog
must name every folder the package ships and every study file in it, or `list` would hide one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from caplab import studies
from caplab.studies.catalog import CATALOG

FOLDERS = sorted(
    p.name for p in studies.study_folder(".").iterdir() if p.is_dir() and not p.name.startswith("_")
)


def caplab(cmd: list[str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd)


def test_the_catalog_names_every_built_in_folder_and_each_of_its_study_files() -> None:
    assert sorted(s.name for s in CATALOG) == FOLDERS
    for s in CATALOG:
        shipped = sorted(f.name for f in studies.study_folder(s.name).glob("*.yaml"))
        assert sorted(s.files) == shipped, s.name


def test_list_names_every_study_with_its_seed_and_times(caplab_cmd: list[str]) -> None:
    p = caplab(caplab_cmd, "studies", "list", "--json")
    assert p.returncode == 0, p.stderr
    listed = {s["name"]: s for s in json.loads(p.stdout)}
    assert sorted(listed) == FOLDERS
    assert listed["hl7-hardware"]["seed"].startswith("002")
    assert "mirroring.yaml" in listed["hl7-hardware"]["files"]
    table = caplab(caplab_cmd, "studies", "list")
    assert all(name in table.stdout for name in FOLDERS)


def test_show_gives_the_studys_own_description_and_how_to_run_each_part(caplab_cmd: list[str]) -> None:
    p = caplab(caplab_cmd, "studies", "show", "hl7-hardware")
    assert p.returncode == 0, p.stderr
    assert "MLLP in → queue in PostgreSQL" in p.stdout  # from study.yaml's description
    assert "caplab studies run hl7-hardware --quick" in p.stdout
    assert "caplab studies run hl7-hardware --part mirroring" in p.stdout


def test_copy_writes_the_study_files_where_asked(caplab_cmd: list[str], tmp_path: Path) -> None:
    p = caplab(caplab_cmd, "studies", "copy", "biztalk-scaleout", str(tmp_path / "mine"))
    assert p.returncode == 0, p.stderr
    shipped = studies.study_folder("biztalk-scaleout")
    for name in ("quick.yaml", "study.yaml", "messaging.xml"):
        assert (tmp_path / "mine" / name).read_bytes() == (shipped / name).read_bytes()
    assert f"caplab run {tmp_path / 'mine' / 'quick.yaml'}" in p.stdout


def test_a_name_or_part_that_does_not_exist_exits_2_naming_what_does(caplab_cmd: list[str]) -> None:
    p = caplab(caplab_cmd, "studies", "run", "hl7", "--quick")
    assert p.returncode == 2
    assert "no built-in study 'hl7': did you mean hl7-hardware?" in p.stderr
    p = caplab(caplab_cmd, "studies", "run", "hl7-hardware", "--part", "raid")
    assert p.returncode == 2
    assert "hl7-hardware has no part 'raid': its files are quick.yaml" in p.stderr
    p = caplab(caplab_cmd, "studies", "run", "hl7-hardware", "--quick", "--part", "mirroring")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr


def test_run_copies_the_study_into_its_directory_and_runs_the_file_asked_for(
    caplab_cmd: list[str], tmp_path: Path, closed_port: int
) -> None:
    """The run itself is the study's (its tests run each quick study): here, that `run` copies the
    folder into ``./NAME`` and hands the quick file to `caplab run`, whose store then refuses."""
    db = f"postgresql://caplab@127.0.0.1:{closed_port}/none"
    p = caplab(caplab_cmd, "studies", "run", "miis-disk", "--quick", "--db", db, cwd=tmp_path)
    assert p.returncode == 1
    assert f"cannot open the results store {db}" in p.stderr
    assert (tmp_path / "miis-disk" / "quick.yaml").is_file()


def test_run_takes_the_options_caplab_run_takes(caplab_cmd: list[str], tmp_path: Path) -> None:
    """`studies run NAME` is `caplab run` on the copied file: its gates, report and live page too."""
    p = caplab(caplab_cmd, "studies", "run", "--help", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for option in ("--json", "--report-dir", "--junit", "--web", "--db"):
        assert option in p.stdout, option
