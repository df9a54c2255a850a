"""The page written out: index.html with Plotly figures, report.md with SVG charts (matplotlib)."""
