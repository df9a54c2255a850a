"""Every built-in study file parses into cells as shipped: a study folder's files are read by
`caplab run` only when someone runs them, and most run for hours, so a mistake in one (a factor
misspelled, a profile never declared) would otherwise surface only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab import studies
from caplab.spec import load_study

FOLDERS = sorted(
    p.name for p in studies.study_folder(".").iterdir() if p.is_dir() and not p.name.startswith("_")
)
FILES = [(folder, f.name) for folder in FOLDERS for f in sorted(studies.study_folder(folder).glob("*.yaml"))]


def test_every_seed_has_a_built_in_study() -> None:
    seeds = {"biztalk-scaleout", "miis-disk", "hl7-hardware", "role-consolidation", "availability-groups"}
    assert seeds <= set(FOLDERS)


@pytest.mark.parametrize(("folder", "name"), FILES)
def test_a_built_in_study_file_loads_into_cells(folder: str, name: str, tmp_path: Path) -> None:
    path = studies.prepare(folder, tmp_path) / name
    study = load_study(path)
    assert study.cells, f"{folder}/{name}: no cells"
