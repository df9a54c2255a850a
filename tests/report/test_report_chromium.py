"""The page in a real headless Chromium: it loads from disk, every chart renders, nothing is
logged as an error, tables sort, the trial selector redraws. Screenshots (screen and print) and a
PDF are kept in build/test-artifacts/report/ — look at them: they are what users see.

Skipped when Chromium is not installed, unless CAPLAB_REQUIRE_CHROMIUM=1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.headless_chromium import Chromium, browser_page
from support.reports import Built

ARTIFACTS = Path(__file__).parents[2] / "build" / "test-artifacts" / "report"
WIDTH, HEIGHT = 1280, 900


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    yield from browser_page(WIDTH, HEIGHT)


@pytest.fixture(scope="module")
def page(browser: Chromium, built: Built) -> Chromium:
    browser.navigate((built.scaleout.directory / "index.html").as_uri())
    browser.wait_for("document.body.getAttribute('data-charts-rendered')")
    return browser


def test_every_chart_renders(page: Chromium) -> None:
    plots = page.evaluate("document.querySelectorAll('.plot[data-chart]').length")
    assert plots >= 5
    assert page.evaluate("document.body.getAttribute('data-charts-rendered')") == str(plots)
    # plotly draws each figure into its own .main-svg, with traces in it.
    assert page.evaluate("document.querySelectorAll('.plot .main-svg').length") >= plots
    drawn = "Array.from(document.querySelectorAll('.plot')).filter(p => p.querySelector('.trace')).length"
    assert page.evaluate(drawn) == plots


def test_no_console_errors(page: Chromium) -> None:
    errors = page.errors()
    assert errors.all() == [], errors


def test_screenshots_for_people_to_look_at(page: Chromium) -> None:
    page.viewport(WIDTH, HEIGHT)
    top = page.screenshot(ARTIFACTS / "index-top.png")
    whole = page.screenshot(ARTIFACTS / "index-full.png", full_page=True)
    page.print_media(True)
    try:
        printed = page.screenshot(ARTIFACTS / "index-print.png", full_page=True)
        pdf = page.pdf(ARTIFACTS / "index.pdf")
    finally:
        page.print_media(False)
    for path in (top, whole, printed):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert whole.stat().st_size > top.stat().st_size
    assert page.evaluate("getComputedStyle(document.querySelector('nav.toc')).display") != "none"


def test_printed_the_charts_are_the_svg_files_and_the_controls_are_gone(page: Chromium) -> None:
    page.print_media(True)
    try:
        for hidden in ("nav.toc", ".explorer-bar", ".plot"):
            assert page.evaluate(f"getComputedStyle(document.querySelector('{hidden}')).display") == "none"
        images = page.evaluate(
            "Array.from(document.querySelectorAll('img.print-only')).map(i => "
            "[i.getAttribute('src'), getComputedStyle(i).display, i.complete && i.naturalWidth > 0])"
        )
        assert len(images) >= 5
        for src, display, loaded in images:
            assert display == "block" and loaded, src
        assert page.errors().all() == []
    finally:
        page.print_media(False)


def test_tables_sort_by_the_number_not_the_text(page: Chromium) -> None:
    column = """(() => {
        const table = document.querySelector('#results table.sortable');
        const heads = Array.from(table.querySelectorAll('thead th'));
        const i = heads.findIndex(h => h.textContent.startsWith('p99'));
        heads[i].click();
        const first = Array.from(table.tBodies[0].rows).map(r => parseFloat(r.cells[i].dataset.sort));
        heads[i].click();
        const second = Array.from(table.tBodies[0].rows).map(r => parseFloat(r.cells[i].dataset.sort));
        return [first, second];
    })()"""
    ascending, descending = page.evaluate(column)
    # A cell with no figure (a search that found nothing on a loaded machine) sorts as a blank.
    ascending = [v for v in ascending if v is not None]
    descending = [v for v in descending if v is not None]
    assert len(ascending) >= 2
    assert ascending == sorted(ascending)
    assert descending == sorted(descending, reverse=True)


def test_the_trial_selector_redraws_the_timeline(page: Chromium) -> None:
    switch = """(() => {
        const select = document.querySelector('select[data-explorer]');
        const plot = document.getElementById(select.dataset.explorer);
        const before = plot.getAttribute('data-chart');
        const other = Array.from(select.options).find(o => o.value !== before);
        select.value = other.value;
        select.dispatchEvent(new Event('change'));
        return [before, plot.getAttribute('data-chart'), other.value];
    })()"""
    before, after, wanted = page.evaluate(switch)
    assert before != after == wanted
    title = page.wait_for(
        "document.querySelector('#explorer-1 .gtitle') && "
        "document.querySelector('#explorer-1 .gtitle').textContent"
    )
    assert "trial" in title
    assert page.errors().all() == []
