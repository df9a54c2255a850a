"""`caplab report`: write a study's report and say where it is.

Exit codes as for `show`: 0 written, 1 a problem the message explains (no store, no such study,
a directory that cannot be written). The store URL is printed redacted, never with its password.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from caplab.cli import exits
from caplab.cli.options import DB_HELP

# The store commands' opening and error handling, shared so `report` fails exactly as `show` does.
from caplab.cli.store import guarded, open_store
from caplab.report import write_report


@click.command("report")
@click.argument("study", default="latest")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory to write into [default: ./reports/study-ID].",
)
@click.option("--db", help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help='Print {"report": DIR, "files": [...]} instead.')
def report_command(study: str, output: Path | None, db: str | None, as_json: bool) -> None:
    """Write the sizing report of a study (an id, a name or `latest`): index.html, report.md,
    results.json. Prints the path of index.html."""
    sys.exit(cmd_report(db, study, output, as_json))


def cmd_report(db_url: str | None, ref: str, out_dir: Path | None, as_json: bool) -> int:
    """Writes the report of study ``ref`` (an id, a name or ``latest``) into ``out_dir`` (default
    ``./reports/study-ID/``); prints index.html's path, or ``{"report": dir, "files": [...]}``."""

    def work() -> int:
        with open_store(db_url) as store:
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
        return exits.OK

    return guarded(work)
