"""Built-in studies: the demo and the seed papers' studies, each a folder with its study files and
the documents it sends."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

COPIED_SUFFIXES = (".yaml", ".xml", ".json", ".hl7", ".csv", ".sql")
"""What a study folder holds besides code: its study files and the documents it sends."""


def study_folder(name: str) -> Path:
    """A built-in study's folder inside the installed package."""
    return Path(str(resources.files(__name__).joinpath(name)))


def prepare(name: str, workdir: Path) -> Path:
    """Copies built-in study ``name``'s files into ``workdir`` (overwriting earlier copies of them,
    leaving anything else there alone) and returns the directory: what ran is there to read and
    edit, and the systems' data live on the user's disk, not inside the installed package."""
    workdir.mkdir(parents=True, exist_ok=True)
    for source in sorted(study_folder(name).iterdir()):
        if source.is_file() and source.suffix in COPIED_SUFFIXES:
            shutil.copyfile(source, workdir / source.name)
    return workdir
