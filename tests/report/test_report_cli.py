"""`caplab report`: where it writes, what it prints, how it fails."""

from __future__ import annotations

import json
from pathlib import Path

from support.reports import Built, caplab


def test_run_writes_the_report_at_its_end_and_says_where(built: Built) -> None:
    page = built.scaleout.directory / "index.html"
    assert f"report: {page}" in built.scaleout.done.stderr
    assert page.is_file()


def test_report_latest_prints_the_page_it_wrote(built: Built) -> None:
    done = built.fixed.done
    assert done.stdout.strip() == str(built.fixed.directory / "index.html")
    assert "wrote the report of study 2" in done.stderr
    assert {"index.html", "report.md", "results.json", "plotly.min.js"} <= {
        p.name for p in built.fixed.directory.iterdir()
    }


def test_json_lists_the_files_for_scripts(built: Built, tmp_path: Path) -> None:
    done = caplab("report", "report-scaleout", "-o", tmp_path / "out", "--db", built.db_url, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["report"] == str(tmp_path / "out")
    files = [Path(p) for p in out["files"]]
    assert [p.name for p in files[:3]] == ["index.html", "report.md", "results.json"]
    assert all(p.is_file() for p in files)


def test_the_default_directory_is_reports_study_id(built: Built, tmp_path: Path) -> None:
    done = caplab("report", "2", "--db", built.db_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reports" / "study-2" / "index.html").is_file()
    assert done.stdout.strip() == str(Path("reports") / "study-2" / "index.html")


def test_an_unknown_study_exits_1_and_writes_nothing(built: Built, tmp_path: Path) -> None:
    done = caplab("report", "99", "-o", tmp_path / "none", "--db", built.db_url)
    assert done.returncode == 1
    assert "no study 99" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "none").exists()


def test_a_store_password_is_never_printed(tmp_path: Path) -> None:
    done = caplab("report", "latest", "--db", "postgresql://app:Pw-9x7@127.0.0.1:1/caplab", cwd=tmp_path)
    assert done.returncode == 1
    assert "Pw-9x7" not in done.stdout + done.stderr
    assert "app:***@" in done.stderr
    assert not (tmp_path / "reports").exists()
