"""`caplab report`: write a study's report and say where it is.

Exit codes as for `show`: 0 written, 1 a problem the message explains (no store, no such study,
a directory that cannot be written). The store URL is printed redacted, never with its password.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from caplab.report.writer import write_report

# The store commands' opening and error handling, shared so `report` fails exactly as `show` does.
from caplab.store.commands import _guarded, _open

__all__ = ["cmd_report"]


def cmd_report(db_url: str | None, ref: str, out_dir: Path | None, as_json: bool) -> int:
    """Writes the report of study ``ref`` (an id, a name or ``latest``) into ``out_dir`` (default
    ``./reports/study-ID/``); prints index.html's path, or ``{"report": dir, "files": [...]}``."""

    def work() -> int:
        with _open(db_url) as store:
            study_id = store.resolve_study(ref)
            written = write_report(store, study_id, out_dir)
        if as_json:
            out = {"report": str(written.directory), "files": [str(p) for p in written.files]}
            json.dump(out, sys.stdout)
            sys.stdout.write("\n")
        else:
            print(written.html)
            charts = sum(p.suffix == ".svg" for p in written.assets)
            print(
                f"wrote the report of study {study_id} to {written.directory}: {written.html.name}, "
                f"{written.markdown.name} ({charts} SVG charts), {written.results.name}",
                file=sys.stderr,
            )
        return 0

    return _guarded(work)
