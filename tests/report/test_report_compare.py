"""`caplab compare` on the report fixture's stored studies, as a user runs it."""

from __future__ import annotations

import json
import subprocess

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
