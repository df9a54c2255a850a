"""bench/RESULTS.md holds a generated section and hand-written ones (before/after comparisons, the
capacity and idsync benches' figures): a run rewrites only its own section, between markers, and
keeps every other line of the file."""

from pathlib import Path

BEGIN = "<!-- bench/run.py: generated section begins (each run rewrites it; text outside is kept) -->"
END = "<!-- bench/run.py: generated section ends -->"


def merged(existing: str | None, generated: str, stamp: str) -> str:
    """The file's new text: ``generated`` (dated ``stamp``) between the markers, in place of the
    last run's; appended after the hand-written text when the file has no markers yet; the whole
    file when there is none."""
    section = f"{BEGIN}\n{generated.rstrip()}\n\n_Generated {stamp}._\n{END}"
    if not existing:
        return section + "\n"
    start, end = existing.find(BEGIN), existing.find(END)
    if start >= 0 and end > start:
        return existing[:start] + section + existing[end + len(END) :]
    return existing.rstrip("\n") + "\n\n" + section + "\n"


def write_results(path: Path, generated: str, stamp: str) -> None:
    """Writes the run's section into ``path`` without touching what was written there by hand."""
    existing = path.read_text(encoding="utf-8") if path.exists() else None
    path.write_text(merged(existing, generated, stamp), encoding="utf-8")
