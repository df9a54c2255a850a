"""`caplab compare` on the report fixture's stored studies, as a user runs it."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

from support.reports import Built


def compare(caplab_cmd: list[str], built: Built, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*caplab_cmd, "compare", *args, "--db", built.db_url]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_a_study_against_itself_is_indistinguishable_in_every_cell_and_passes_the_gate(
    caplab_cmd: list[str], built: Built
) -> None:
    p = compare(caplab_cmd, built, "report-scaleout", "1", "--json", "--fail-if-slower", "5%")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert (doc["baseline"], doc["candidate"]) == (1, 1)
    assert len(doc["cells"]) == len(built.scaleout.results["capacity"]) and doc["unmatched"] == []
    for cell in doc["cells"]:
        assert cell["ratio"] == 1.0 and cell["limit_changed"] is None
        assert cell["change"] in ("indistinguishable", "no interval")
        if cell["interval"] is not None:
            assert cell["interval"][0] <= 1.0 <= cell["interval"][1]
    # Each cell's latency distribution side by side: its trials' merged histograms, as the report
    # gave them.
    cells = {
        ", ".join(f"{k}={v}" for k, v in sorted(c["factors"].items())): c
        for c in built.scaleout.results["cells"]
    }
    assert set(doc["latency_ms"]) == {c["cell"] for c in doc["cells"]}
    for key, sides in doc["latency_ms"].items():
        assert sides["baseline"] == sides["candidate"]
        reported = cells[key]["metrics"]["latency_ms"]
        assert sides["baseline"]["p50"] == reported["p50"] and sides["baseline"]["count"] == reported["count"]
        assert sides["baseline"]["p50"] <= sides["baseline"]["p99"] <= sides["baseline"]["max"]
    text = compare(caplab_cmd, built, "1", "1")
    assert "latency (ms) of each cell's measured trials" in text.stdout


def test_studies_with_no_cell_in_common_say_so_and_a_missing_study_exits_1(
    caplab_cmd: list[str], built: Built
) -> None:
    p = compare(caplab_cmd, built, "1", "2")
    assert p.returncode == 0, p.stderr
    assert "only in one study: workers=1" in p.stdout
    p = compare(caplab_cmd, built, "1", "99")
    assert p.returncode == 1
    assert "no study 99 in" in p.stderr
    p = compare(caplab_cmd, built, "1", "1", "--fail-if-slower", "150%")
    assert p.returncode == 2


def copied_store(built: Built, path: Path, hostname: str | None = None) -> str:
    """A copy of the session's store (another file: another store), its studies recorded on
    ``hostname`` when given."""
    shutil.copyfile(built.db_url.removeprefix("sqlite:///"), path)
    if hostname is not None:
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE studies SET environment = json_set(environment, '$.hostname', ?)", (hostname,)
            )
    return f"sqlite:///{path}"


def test_a_study_in_another_store_on_the_same_machine_is_compared_as_it_is(
    caplab_cmd: list[str], built: Built, tmp_path: Path
) -> None:
    other = copied_store(built, tmp_path / "other.db")
    p = compare(caplab_cmd, built, "1", "1", "--candidate-db", other, "--json", "--fail-if-slower", "5%")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["stores"] == [built.db_url, other] and doc["basis"] == "absolute"
    assert doc["machines"]["baseline"] == doc["machines"]["candidate"]
    assert len(doc["cells"]) == len(built.scaleout.results["capacity"])
    assert all(c["ratio"] == 1.0 for c in doc["cells"])
    # -o: the same comparison as a page and its JSON, beside the table.
    page = tmp_path / "page"
    p = compare(caplab_cmd, built, "1", "1", "--candidate-db", other, "-o", str(page))
    assert p.returncode == 0, p.stderr
    assert json.loads((page / "compare.json").read_text()) == doc
    html = (page / "index.html").read_text()
    assert "Study 1 against study 1" in html and "indistinguishable" in html
    assert all(c["cell"] in html for c in doc["cells"]) and "histograms merged" in html


def test_studies_from_different_machines_are_compared_within_each_study(
    caplab_cmd: list[str], built: Built, tmp_path: Path
) -> None:
    other = copied_store(built, tmp_path / "other.db", hostname="elsewhere")
    p = compare(caplab_cmd, built, "1", "1", "--candidate-db", other, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["basis"] == "within-study" and doc["machines"]["candidate"].startswith("elsewhere: ")
    capacity = built.scaleout.results["capacity"]
    reference = doc["reference"]
    assert reference is not None and len(doc["cells"]) == len(capacity) - 1, "all but the reference"
    for cell in doc["cells"]:
        assert cell["baseline"]["unit"] == f"× {reference}" and cell["ratio"] == 1.0
        assert cell["change"] in ("indistinguishable", "no interval")
    text = compare(caplab_cmd, built, "1", "1", "--candidate-db", other)
    assert text.returncode == 0, text.stderr
    assert "studies on different machines" in text.stdout and f"over {reference}'s" in text.stdout
    assert "elsewhere: " in text.stdout
