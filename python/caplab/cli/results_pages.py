"""`caplab studies publish`: the built-in studies' results pages (docs/studies/results/) written
from the store, so the figures the docs publish are the stored run's, never typed by hand.

Each built-in study has a page for its whole study — or, where only the quick cut ran, for that —
and one per part (hl7-hardware's rebuild, mirroring, boxes …). A page is rewritten from the
newest stored run of its file (found by the ``name:`` the file gives its study); a page with no
stored run keeps what an earlier publish wrote, or says how to run it. The index is made again
from every page's results.json each time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import yaml

from caplab import studies
from caplab.cli import exits
from caplab.cli.store import guarded, open_store
from caplab.json_types import JsonDict
from caplab.report.document import load_results
from caplab.report.model.types import Results
from caplab.report.publish import (
    INDEX,
    PageSource,
    index_page,
    page_summary,
    published_report,
    unpublished_page,
)
from caplab.report.writer import RESULTS, write_page
from caplab.store.errors import StudyNotFound
from caplab.store.repository import Store
from caplab.studies.catalog import CATALOG, BuiltInStudy


@dataclass(frozen=True)
class Page:
    """A page and the study files whose stored runs may fill it, the preferred first."""

    candidates: tuple[PageSource, ...]

    @property
    def shown(self) -> PageSource:
        """The source named on the page when nothing has run: the first candidate."""
        return self.candidates[0]


def pages(study: BuiltInStudy) -> list[Page]:
    """The study's pages: the whole study (its quick cut when the whole has not run), each part."""
    run = f"caplab studies run {study.name}"
    main = Page(
        (PageSource(study.name, "study.yaml", run), PageSource(study.name, "quick.yaml", f"{run} --quick"))
    )
    parts = [
        Page((PageSource(study.name, p, f"{run} --part {p.removesuffix('.yaml')}"),)) for p in study.parts
    ]
    return [main, *parts]


def stored_name(source: PageSource) -> str:
    """The study name its file gives (``name:``): what the store keeps its runs under."""
    text = (studies.study_folder(source.study) / source.file).read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    return str(document["name"]) if isinstance(document, dict) and "name" in document else source.file


def newest_run(store: Store, page: Page) -> tuple[PageSource, int] | None:
    """The newest stored run of the page's preferred file that has one."""
    for source in page.candidates:
        try:
            return source, store.resolve_study(stored_name(source))
        except StudyNotFound:
            continue
    return None


def publish(store: Store, chosen: Sequence[BuiltInStudy], root: Path) -> list[JsonDict]:
    """Writes the pages of ``chosen`` from the store, a stub for every page never written, and the
    index over every built-in study's pages; returns one entry per page of ``chosen``: written from
    which study, kept, or a stub."""
    done: list[JsonDict] = []
    for study in chosen:
        for page in pages(study):
            folder = root / page.shown.folder
            found = newest_run(store, page)
            if found is not None:
                source, study_id = found
                results = load_results(store, study_id)
                write_page(published_report(results, source), results, folder)
                done.append({"page": source.page, "file": source.file, "study_id": study_id, "written": True})
            else:  # kept as an earlier publish wrote it, or made below as a stub
                written = not (folder / INDEX).exists()
                done.append({"page": page.shown.page, "file": None, "study_id": None, "written": written})
    every = [page for study in CATALOG for page in pages(study)]
    for page in every:  # the index links every page: those never published say how to run them
        stub = root / page.shown.folder / INDEX
        if not stub.exists():
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text(unpublished_page(page.shown), encoding="utf-8")
    rows = [_published_row(root, page) for page in every]
    (root / INDEX).write_text(index_page(rows, [p.shown for p in every]), encoding="utf-8")
    return done


def _published_row(root: Path, page: Page) -> JsonDict | None:
    """The index's row from the results.json a page was published with (None: not published)."""
    data = root / page.shown.folder / RESULTS
    if not data.exists():
        return None
    results = cast(Results, json.loads(data.read_text(encoding="utf-8")))
    name = results["study"]["name"]
    source = next((s for s in page.candidates if stored_name(s) == name), page.shown)
    return page_summary(results, source)


def run_studies(db_url: str | None, chosen: Sequence[BuiltInStudy], workdir: Path, quick: bool) -> int:
    """Runs each of ``chosen`` into the store before it is published: the quick cut, or the whole
    study and each part, each from a copy of its folder in ``workdir/NAME`` with its full report
    beside it. A study whose cells failed is still published (the page says so); Ctrl-C stops
    them all (130), keeping what was stored."""
    from caplab.cli.run import cmd_run

    for study in chosen:
        folder = studies.prepare(study.name, workdir / study.name)
        for file in ("quick.yaml",) if quick else ("study.yaml", *study.parts):
            print(f"== {study.name}: {file}", file=sys.stderr)
            code = cmd_run(
                folder / file, db_url, False, resume=False, report_dir=folder / f"report-{file[:-5]}"
            )
            if code == exits.INTERRUPTED:
                return code
    return exits.OK


def cmd_publish(db_url: str | None, chosen: Sequence[BuiltInStudy], root: Path, as_json: bool) -> int:
    """Publishes ``chosen`` into ``root``; prints each page written (or the entries as JSON)."""

    def work() -> int:
        with open_store(db_url) as store:
            done = publish(store, chosen, root)
        if as_json:
            print(json.dumps({"directory": str(root), "pages": done}, indent=2))
            return exits.OK
        for entry in done:
            page = root / str(entry["page"])
            if entry["study_id"] is not None:
                print(f"{page}: study {entry['study_id']} ({entry['file']})", file=sys.stderr)
            else:
                print(f"{page}: no stored run, {'a stub' if entry['written'] else 'kept'}", file=sys.stderr)
        print(root / INDEX)
        return exits.OK

    return guarded(work)
