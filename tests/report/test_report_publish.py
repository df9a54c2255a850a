"""`caplab studies publish`: the docs' results pages are written from the store. The session's
scale-out study is stored again under the names two built-in study files give their studies (the
store finds a built-in's runs by that name), so a page is made from a real run: its figures are
the stored ones, the whole study is preferred to the quick cut, a study with no run keeps its page
or gets one that says how to run it, and the index is made from what the pages were written from."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import yaml

from caplab.cli.results_pages import pages
from caplab.studies.catalog import CATALOG, built_in
from support.reports import Built, caplab

ROOT = Path(__file__).resolve().parents[2]


def stored_as(built: Built, tmp_path: Path, names: list[str]) -> str:
    """A copy of the session's store with the scale-out study (id 1) stored again under each of
    ``names``, in order (ids 3, 4, …): the copies share its cells and trials."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "c.db"
    shutil.copyfile(built.db_url.removeprefix("sqlite:///"), db)
    with sqlite3.connect(db) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(studies)") if r[1] not in ("id", "name")]
        for name in names:
            listed = ", ".join(columns)
            new = conn.execute(
                f"INSERT INTO studies (name, {listed}) SELECT ?, {listed} FROM studies WHERE id = 1", (name,)
            ).lastrowid
            conn.execute("UPDATE cells SET study_id = ? WHERE study_id = 1", (new,))
    return f"sqlite:///{db}"


def publish(db_url: str, out: Path, *names: str) -> dict[str, Any]:
    done = caplab("studies", "publish", *names, "--db", db_url, "-o", out, "--json", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_a_page_is_the_stored_runs_findings_and_figures_under_what_ran(built: Built, tmp_path: Path) -> None:
    db_url = stored_as(built, tmp_path, ["pg-failover-quick"])
    out = tmp_path / "results"
    written = publish(db_url, out, "pg-failover")
    [entry] = written["pages"]
    assert entry == {"page": "pg-failover/index.md", "file": "quick.yaml", "study_id": 3, "written": True}
    page = (out / "pg-failover" / "index.md").read_text()
    assert page.startswith("# pg-failover: measured results (the quick cut)")
    assert "`caplab studies run pg-failover --quick`" in page
    # The sections a reader of the docs needs, not the series and searches of the full report.
    assert "## 1. Summary" in page and "Capacity" in page and "Methodology" in page
    assert "Appendix" not in page and "Trials over time" not in page
    # Its figures are the stored run's: the page's results.json is the report's of study 1.
    results = json.loads((out / "pg-failover" / "results.json").read_text())
    scaleout = built.scaleout.results
    assert [c["metrics"] for c in results["cells"]] == [c["metrics"] for c in scaleout["cells"]]
    for entry_ in results["capacity"]:
        assert f"{entry_['value']:,.0f}" in page
    assert all((out / "pg-failover" / p).is_file() for p in results_charts(page))
    index = (out / "index.md").read_text()
    row = next(line for line in index.splitlines() if "(pg-failover/index.md)" in line)
    assert "| quick.yaml |" in row and "not yet" not in row
    found = [f["verdict"] for f in results["findings"]]
    counts = " / ".join(str(found.count(v)) for v in ("reproduced", "contradicted", "inconclusive"))
    assert row.endswith(f"| {counts} |")


def results_charts(page: str) -> list[str]:
    return [line.split("](", 1)[1].split(")", 1)[0] for line in page.splitlines() if line.startswith("![")]


def test_the_whole_study_is_preferred_and_a_page_without_a_run_is_kept(built: Built, tmp_path: Path) -> None:
    db_url = stored_as(built, tmp_path, ["pg-failover", "pg-failover-quick"])
    out = tmp_path / "results"
    first = publish(db_url, out, "pg-failover")["pages"]
    assert first[0]["file"] == "study.yaml" and first[0]["study_id"] == 3, "the whole study, though older"
    # Every page of the site exists after any publish: the unpublished as a stub saying how to run it.
    stub = (out / "miis-disk" / "index.md").read_text()
    assert "No run of this study file has been published yet" in stub
    assert "caplab studies run miis-disk" in stub
    assert (out / "hl7-hardware" / "rebuild" / "index.md").exists()
    # A publish from a store without its run keeps a published page as it was.
    before = (out / "pg-failover" / "index.md").read_text()
    kept = publish(stored_as(built, tmp_path / "other", []), out, "pg-failover")["pages"]
    assert kept == [{"page": "pg-failover/index.md", "file": None, "study_id": None, "written": False}]
    assert (out / "pg-failover" / "index.md").read_text() == before


def test_the_docs_list_every_results_page() -> None:
    """mkdocs --strict fails on a page missing from the navigation, or a navigation entry without
    its page: the committed pages and mkdocs.yml follow the catalogue."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = set(json.dumps(nav).replace('"', " ").split())
    for study in CATALOG:
        for page in pages(built_in(study.name)):
            path = f"studies/results/{page.shown.page}"
            assert path in listed, path
            assert (ROOT / "docs" / path).is_file(), path
