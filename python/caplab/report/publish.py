"""The built-in studies' published results (docs/studies/results/): a page per study file, made
from its stored run by `caplab studies publish` (`make results` runs the studies, then that), never
typed by hand. A page is the part of the sizing report a reader of the docs needs — the summary,
the findings judged with the paper's figures beside ours, the machine, the figures with their
intervals, the methodology — under a line that says which file ran, how to run it again, when and
for how long. A study file with no stored run gets a page that says so and how to run it: the
site's navigation lists every page, run or not.

Pure: results documents in, markdown and a small summary out; writing the files is
`caplab.report.writer.write_page`'s, finding the stored runs the CLI's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from caplab import units as u
from caplab.json_types import JsonDict
from caplab.report.layout.blocks import Report
from caplab.report.layout.sections import build_report
from caplab.report.model.types import Results

PUBLISHED_SECTIONS = (
    "summary",
    "findings",
    "environment",
    "recovery",
    "consolidation",
    "job",
    "capacity",
    "scaling",
    "methodology",
)
"""The report's sections a results page keeps (by anchor, in the report's order): what was found
and how far to trust it. The scenario and matrix are the study file's (its own page shows them),
the trial-by-trial series and the searches' appendix stay in the full report."""

INDEX = "index.md"


@dataclass(frozen=True)
class PageSource:
    """One page: a built-in study's file, and the command that runs it again."""

    study: str
    """The built-in study's name (`caplab studies list`)."""
    file: str
    """Its study file: ``study.yaml`` (the whole study), ``quick.yaml`` or a part."""
    command: str

    @property
    def folder(self) -> str:
        """The page's folder under the results directory (its index.md, charts/ and results.json):
        the study's own for the whole study (or, with none stored, its quick cut), a sub-folder
        for each part."""
        part = self.file.removesuffix(".yaml")
        return self.study if self.file in ("study.yaml", "quick.yaml") else f"{self.study}/{part}"

    @property
    def page(self) -> str:
        return f"{self.folder}/index.md"


def published_report(results: Results, source: PageSource) -> Report:
    """The sizing report of ``results`` cut to ``PUBLISHED_SECTIONS``, titled by what ran."""
    report = build_report(results)
    cut = "the quick cut" if source.file == "quick.yaml" else source.file
    title = f"{source.study}: measured results ({cut})"
    subtitle = f"{report.subtitle} · `{source.command}`"
    return Report(title, subtitle, [s for s in report.sections if s.anchor in PUBLISHED_SECTIONS])


def page_summary(results: Results, source: PageSource) -> JsonDict:
    """The index's row for a published page: what ran, where, when, how long, the verdicts."""
    study, env = results["study"], results["environment"]
    verdicts = Counter(f["verdict"] for f in results["findings"])
    return {
        "study": source.study,
        "file": source.file,
        "page": source.page,
        "command": source.command,
        "status": study["status"],
        "run_at": study["created_at"],
        "elapsed_s": study["elapsed_s"],
        "machine": _machine(env),
        "findings": {v: verdicts.get(v, 0) for v in ("reproduced", "contradicted", "inconclusive")},
    }


def _machine(env: Mapping[str, object]) -> str:
    model, cores, memory = env.get("cpu_model"), env.get("cores"), env.get("memory_gb")
    parts = [str(model) if model else "an unrecorded CPU"]
    if isinstance(cores, int | float):
        parts.append(f"{cores:g} cores")
    if isinstance(memory, int | float):
        parts.append(f"{memory:.0f} GB")
    return ", ".join(parts)


def unpublished_page(source: PageSource) -> str:
    """The page of a study file with no stored run yet."""
    return (
        f"# {source.study}: measured results ({source.file})\n\n"
        "No run of this study file has been published yet. Run it, then publish what the store "
        "holds:\n\n"
        f"```sh\n{source.command}\ncaplab studies publish {source.study}\n```\n\n"
        "`make results` runs every built-in study and publishes them all "
        f"([Development]({'../' * (source.folder.count('/') + 3)}development.md#published-results)).\n"
    )


def index_page(rows: Sequence[JsonDict | None], sources: Sequence[PageSource]) -> str:
    """The results' index: one row per page, published or not, in the catalogue's order."""
    lines = [
        "# Measured results",
        "",
        "Each built-in study's last published run on this project's machine, generated from the "
        "stored results by `caplab studies publish` (`make results` runs them all first). "
        "The papers' figures on these pages are their hardware's, beside ours, never ours.",
        "",
        "| Study | File | Run | Took | Machine | Findings reproduced / contradicted / inconclusive |",
        "|---|---|---|---|---|---|",
    ]
    for row, source in zip(rows, sources, strict=True):
        part = "" if source.folder == source.study else f": {source.file.removesuffix('.yaml')}"
        link = f"[{source.study}{part}]({source.page})"
        if row is None:
            lines.append(f"| {link} | {source.file} | not yet | | | |")
            continue
        found = row["findings"]
        verdicts = (
            f"{found['reproduced']} / {found['contradicted']} / {found['inconclusive']}"
            if isinstance(found, dict)
            else ""
        )
        run_at = str(row["run_at"] or "")[:16].replace("T", " ")
        took = u.minutes(row["elapsed_s"])
        status = "" if row["status"] == "complete" else f" ({row['status']})"
        lines.append(
            f"| {link} | {row['file']} | {run_at}{status} | {took} | {row['machine']} | {verdicts} |"
        )
    return "\n".join(lines) + "\n"
