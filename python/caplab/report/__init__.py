"""The sizing report of a study: index.html (interactive), report.md (with SVG charts) and
results.json (every number in both), written from the results store.

Each part uses only those before it: ``model/`` (the results document, typed, built from the
store's study document) → ``text/`` (observations and the recommendation written from it) →
``document.py`` (the two as results.json) → ``layout/`` (sections, tables and charts as plain
data) → ``render/`` (HTML with Plotly, Markdown with SVG) → ``writer.py`` (the files).
"""

from caplab.report.writer import ReportFiles, default_report_dir, write_report

__all__ = ["ReportFiles", "default_report_dir", "write_report"]
