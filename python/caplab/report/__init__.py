"""The sizing report of a study: index.html (interactive), report.md (with SVG charts) and
results.json (every number in both), written from the results store."""

from caplab.report.writer import ReportFiles, default_report_dir, write_report

__all__ = ["ReportFiles", "default_report_dir", "write_report"]
