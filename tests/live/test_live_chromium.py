"""The live page in a real headless Chromium during a quick two-cell study: it draws the intervals
as they come and the matrix's states, then the finished study, with nothing logged as an error.
Screenshots are kept in build/test-artifacts/live/ — look at them: they are what users see.

Skipped when Chromium is not installed, unless CAPLAB_REQUIRE_CHROMIUM=1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import live
from support.headless_chromium import Chromium, browser_page
from support.studies import free_port, knownserver, write_study

pytestmark = pytest.mark.slow  # a whole study, end to end

ARTIFACTS = Path(__file__).parents[2] / "build" / "test-artifacts" / "live"
WIDTH, HEIGHT = 1280, 900
ROWS = "#matrix tbody tr"


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    yield from browser_page(WIDTH, HEIGHT)


def two_cells(tmp_path: Path) -> Path:
    port = free_port()
    study = {
        "name": "live-page",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": knownserver(port, "--cpu-us", "{cpu}"),
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port} --cpu-us"}},
        },
        "factors": {"cpu": [200, 500]},
        "load": {"rate": 100, "duration": "3s", "warmup": "300ms", "interval": "250ms"},
    }
    return write_study(tmp_path / "study.yaml", study)


def test_the_page_follows_the_study_then_shows_it_finished(
    browser: Chromium, caplab_cmd: list[str], tmp_path: Path
) -> None:
    path = two_cells(tmp_path)
    db = f"sqlite:///{tmp_path / 'c.db'}"
    run = live.start([*caplab_cmd, "run", path, "--db", db, "-o", tmp_path / "r", "--web", "0"], cwd=tmp_path)
    try:
        browser.navigate(run.wait_for_page())
        browser.wait_for(
            f"window.live.intervalsSeen >= 3 && !!document.querySelector('{ROWS}[data-state=running]')"
        )
        rows = browser.evaluate(f"document.querySelectorAll('{ROWS}').length")
        assert rows == 2
        assert browser.evaluate("document.querySelectorAll('#intervals tbody tr').length") >= 3
        assert browser.evaluate("document.querySelector('#chart-throughput polyline').getAttribute('points')")
        browser.screenshot(ARTIFACTS / "running.png", full_page=True)
        browser.wait_for("document.body.dataset.status === 'complete'", timeout_s=90)
        states = browser.evaluate(
            f"Array.from(document.querySelectorAll('{ROWS}')).map(r => r.dataset.state)"
        )
        assert states == ["complete", "complete"]
        links = browser.evaluate(
            "Array.from(document.querySelectorAll('#matrix a')).map(a => a.getAttribute('href'))"
        )
        assert links == ["report/index.html#results"] * 2
        assert browser.evaluate("document.getElementById('report').hidden") is False
        assert "server" in browser.evaluate("document.getElementById('resources').textContent")
        browser.screenshot(ARTIFACTS / "finished.png", full_page=True)
        _, err = run.finish(timeout_s=60)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert run.process.returncode == 0, err
    errors = browser.errors()
    assert errors.all() == [], errors
