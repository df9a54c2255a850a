"""bench/RESULTS.md holds generated sections (one per bench script) and hand-written ones
(before/after comparisons): a run rewrites only its own script's section, between that script's
markers, and keeps every other line of the file — so running `make bench` again replaces its
figures instead of appending another copy of them."""

import datetime
from pathlib import Path


def markers(script: str) -> tuple[str, str]:
    """The lines that open and close ``script``'s generated section."""
    return (
        f"<!-- {script}: generated section begins (each run rewrites it; text outside is kept) -->",
        f"<!-- {script}: generated section ends -->",
    )


BEGIN, END = markers("bench/run.py")


def merged(existing: str | None, generated: str, stamp: str, script: str = "bench/run.py") -> str:
    """The file's new text: ``generated`` (dated ``stamp``) between ``script``'s markers, in place
    of its last run's; appended after the rest when the file has no such markers yet; the whole
    file when there is none."""
    begin, end_marker = markers(script)
    section = f"{begin}\n{generated.rstrip()}\n\n_Generated {stamp}._\n{end_marker}"
    if not existing:
        return section + "\n"
    start, end = existing.find(begin), existing.find(end_marker)
    if start >= 0 and end > start:
        return existing[:start] + section + existing[end + len(end_marker) :]
    return existing.rstrip("\n") + "\n\n" + section + "\n"


def write_results(path: Path, generated: str, stamp: str, script: str = "bench/run.py") -> None:
    """Writes ``script``'s section into ``path`` without touching anything else in it."""
    existing = path.read_text(encoding="utf-8") if path.exists() else None
    path.write_text(merged(existing, generated, stamp, script), encoding="utf-8")


def write_now(path: Path, generated: str, script: str) -> None:
    """`write_results`, dated now (UTC)."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_results(path, generated, stamp, script)
