"""The import rules of caplab's first-level packages, read from the source (no import executed).

A unit is a first-level module or package of ``caplab`` (``analysis``, ``engine``, ``cli`` …).
`imports_of` collects, for each unit, the other units and the third-party top-level modules its
files import — at module level, inside functions and under ``TYPE_CHECKING`` alike — and
`violations` checks them against a table of what each unit may import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

TERMINAL_LIBRARIES = frozenset({"click", "rich"})
"""Only the command-line package may talk to the terminal."""


@dataclass
class Unit:
    name: str
    internal: dict[str, set[str]] = field(default_factory=dict)
    """Imported unit → the files (relative paths) that import it."""
    external: dict[str, set[str]] = field(default_factory=dict)
    """Third-party top-level module → the files that import it."""


def unit_of(package_dir: Path, path: Path) -> str:
    rel = path.relative_to(package_dir)
    return rel.parts[0].removesuffix(".py")


def _imported_modules(tree: ast.AST, package: str, module_parts: list[str]) -> list[str]:
    """Absolute dotted names of everything ``tree`` imports; relative imports resolved."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module_parts[: len(module_parts) - node.level]
                prefix = ".".join([package, *base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            names.append(prefix)
            names.extend(f"{prefix}.{alias.name}" for alias in node.names if prefix == package)
    return names


def imports_of(package_dir: Path) -> dict[str, Unit]:
    """Every unit of the package at ``package_dir`` with what its files import."""
    package = package_dir.name
    units: dict[str, Unit] = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir)
        if len(rel.parts) == 1 and rel.name in ("__init__.py", "__main__.py"):
            continue
        name = unit_of(package_dir, path)
        unit = units.setdefault(name, Unit(name))
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = [*parts[:-1], "__init__"]
        for module in _imported_modules(ast.parse(path.read_text(), str(path)), package, parts):
            pieces = module.split(".")
            if pieces[0] == package:
                # ``from caplab import __version__`` names the package itself, not a unit.
                if len(pieces) > 1 and pieces[1] != name and not pieces[1].startswith("__"):
                    unit.internal.setdefault(pieces[1], set()).add(str(rel))
            elif pieces[0] and pieces[0] != "__future__":
                unit.external.setdefault(pieces[0], set()).add(str(rel))
    return units


def cycles(units: dict[str, Unit]) -> list[list[str]]:
    """Groups of units that import each other, directly or around a loop (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in units[v].internal if v in units else ():
            if w not in units:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = _pop_component(stack, v)
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(units):
        if v not in index:
            visit(v)
    return found


def _pop_component(stack: list[str], root: str) -> list[str]:
    """The units above ``root`` on Tarjan's stack, ``root`` included: one strongly connected group."""
    group: list[str] = []
    while True:
        w = stack.pop()
        group.append(w)
        if w == root:
            return group


def violations(units: dict[str, Unit], may_import: dict[str, frozenset[str]], terminal: str) -> list[str]:
    """Every broken rule, one line each naming the files: an import outside a unit's allowed set,
    a unit missing from the table, click/rich outside ``terminal``, a cycle between units."""
    problems: list[str] = []
    for name, unit in sorted(units.items()):
        allowed = may_import.get(name)
        if allowed is None:
            problems.append(f"{name}: not in the layering table; say what it may import")
            continue
        for target, files in sorted(unit.internal.items()):
            if "*" not in allowed and target not in allowed:
                problems.append(f"{name} imports {target} ({', '.join(sorted(files))})")
        if name != terminal:
            for library in sorted(TERMINAL_LIBRARIES & unit.external.keys()):
                files = unit.external[library]
                problems.append(f"{name} imports {library} ({', '.join(sorted(files))}): only {terminal} may")
    problems.extend(f"cycle: {' ↔ '.join(group)}" for group in cycles(units))
    return problems
