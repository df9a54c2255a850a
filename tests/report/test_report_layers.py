"""The report's parts import only the parts before them: model → text → document → layout → render
→ writer. A page layout that reached back into the store, or a model that knew about HTML, would
break the one-way flow from results.json to the page."""

from __future__ import annotations

import ast
from pathlib import Path

import caplab.report

REPORT = Path(caplab.report.__file__).parent
ORDER = ["model", "text", "document", "layout", "render", "writer", "commands"]
"""Each part may import the parts left of it, never those right of it."""


def _part(module: str) -> str | None:
    """The part of caplab.report a module belongs to (None outside the report)."""
    names = module.split(".")
    return names[2] if names[:2] == ["caplab", "report"] and len(names) > 2 else None


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module == "caplab.report":  # from caplab.report import layout
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def broken_rules(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        part = path.relative_to(root).parts[0].removesuffix(".py")
        if part not in ORDER:
            continue
        for module in sorted(_imports(path)):
            other = _part(module)
            if other in ORDER and ORDER.index(other) > ORDER.index(part):
                out.append(f"{path.relative_to(root)} imports {module}")
            if part != "commands" and module.startswith("caplab.study"):
                out.append(f"{path.relative_to(root)} imports {module} (the live progress, not the report)")
    return out


def test_the_report_parts_import_only_those_before_them() -> None:
    assert broken_rules(REPORT) == []


def test_a_model_that_imports_the_layout_breaks_the_rule(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "cells.py").write_text("from caplab.report.layout.tables import results_table\n")
    (tmp_path / "layout").mkdir()
    (tmp_path / "layout" / "tables.py").write_text("from caplab.study.progress import summary_table\n")
    assert broken_rules(tmp_path) == [
        "layout/tables.py imports caplab.study.progress (the live progress, not the report)",
        "model/cells.py imports caplab.report.layout.tables",
    ]
