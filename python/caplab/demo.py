"""`caplab demo`: the BizTalk scale-out study (seeds/000) on msgbus, caplab's own messaging
system, end to end — capacity of every configuration, the limit named, the scale-out fitted, the
sizing report written.

The built-in study folder is copied into a working directory first, so what ran is there to read
and edit (``caplab run DIR/study.yaml`` runs it again), and msgbus's stores and the storage
baseline live on the user's disk, not inside the installed package.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from rich.console import Console

from caplab.study.cli import run_study_command

STUDY = "biztalk-scaleout"
FULL = "study.yaml"
QUICK = "quick.yaml"


def study_folder() -> Path:
    """The built-in study's folder inside the installed package."""
    return Path(str(resources.files("caplab.studies").joinpath(STUDY)))


def prepare(workdir: Path) -> Path:
    """Copies the built-in study's files into ``workdir`` (overwriting earlier copies of them,
    leaving anything else there alone) and returns the directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    for source in sorted(study_folder().iterdir()):
        if source.is_file() and source.suffix in (".yaml", ".xml"):
            shutil.copyfile(source, workdir / source.name)
    return workdir


def run_demo(quick: bool, workdir: Path, db: str | None, report_dir: Path | None) -> int:
    console = Console(stderr=True)
    folder = prepare(workdir)
    study_file = folder / (QUICK if quick else FULL)
    console.print(
        "[bold]caplab demo[/]: the BizTalk Server scale-out study (seeds/000) on msgbus, caplab's own "
        "messaging system — receive → MessageBox stores → processing hosts → back-end sink.\n"
        + (
            "Quick: the messaging flow on 1 store with 1–4 hosts, short trials (about 3 minutes).\n"
            if quick
            else "Full: 1–4 hosts × 1 and 4 stores × messaging and orchestration (about 15 minutes; "
            "--quick for a 3-minute cut).\n"
        )
        + "For every configuration caplab searches the highest rate of documents received and "
        "processed within the SLO, names what limits it, fits the scale-out and writes the report.\n"
        f"Study file: {study_file}",
        highlight=False,
    )
    return run_study_command(study_file, db, as_json=False, resume=False, report_dir=report_dir)
