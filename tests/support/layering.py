"""The import rules of caplab's first-level packages, read from the source (no import executed).

A unit is a first-level module or package of ``caplab`` (``analysis``, ``engine``, ``cli`` …).
`imports_of` collects, for each unit, the other units and the third-party top-level modules its
files import — at module level, inside functions and under ``TYPE_CHECKING`` alike — and
`violations` checks them against a table of what each unit may import. A second table narrows an
allowed unit to some of its modules (``analysis`` may import ``engine.result``, not the engine's
package or its plan types): for that, each import is also kept as the unit's module it names.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
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
    modules: dict[str, set[str]] = field(default_factory=dict)
    """Imported unit or unit's module (``engine``, ``engine.result``) → the files that import it."""


def unit_of(package_dir: Path, path: Path) -> str:
    rel = path.relative_to(package_dir)
    return rel.parts[0].removesuffix(".py")


def _imported_modules(
    tree: ast.AST, package: str, module_parts: list[str], is_module: Callable[[str], bool]
) -> list[str]:
    """Absolute dotted names of everything ``tree`` imports; relative imports resolved. ``from
    pkg.a import b`` names ``pkg.a.b`` when ``b`` is a module, ``pkg.a`` when it is a name in it."""
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
            if prefix == package:
                names.append(prefix)
                names.extend(f"{prefix}.{alias.name}" for alias in node.names)
                continue
            modules = [f"{prefix}.{a.name}" for a in node.names if is_module(f"{prefix}.{a.name}")]
            names.extend(modules)
            if len(modules) < len(node.names):
                names.append(prefix)
    return names


def _module_test(package_dir: Path) -> Callable[[str], bool]:
    """Whether a dotted name (``pkg.engine.result``) is a module or package under ``package_dir``."""

    def is_module(dotted: str) -> bool:
        path = package_dir.parent.joinpath(*dotted.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    return is_module


def imports_of(package_dir: Path) -> dict[str, Unit]:
    """Every unit of the package at ``package_dir`` with what its files import."""
    package = package_dir.name
    is_module = _module_test(package_dir)
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
        tree = ast.parse(path.read_text(), str(path))
        for module in _imported_modules(tree, package, parts, is_module):
            pieces = module.split(".")
            if pieces[0] == package:
                # ``from caplab import __version__`` names the package itself, not a unit.
                if len(pieces) > 1 and pieces[1] != name and not pieces[1].startswith("__"):
                    unit.internal.setdefault(pieces[1], set()).add(str(rel))
                    unit.modules.setdefault(".".join(pieces[1:3]), set()).add(str(rel))
            elif pieces[0] and pieces[0] != "__future__":
                unit.external.setdefault(pieces[0], set()).add(str(rel))
    return units


def cycles(units: dict[str, Unit]) -> list[list[str]]:
    """Groups of units that import each other, directly or around a loop (Tarjan's SCCs)."""
    search = _StronglyConnected(units)
    for v in sorted(units):
        if v not in search.index:
            search.visit(v)
    return search.found


@dataclass
class _StronglyConnected:
    """Tarjan's search over the units' imports; ``found`` holds each loop of two or more."""

    units: dict[str, Unit]
    index: dict[str, int] = field(default_factory=dict)
    low: dict[str, int] = field(default_factory=dict)
    stack: list[str] = field(default_factory=list)
    found: list[list[str]] = field(default_factory=list)

    def visit(self, v: str) -> None:
        self.index[v] = self.low[v] = len(self.index)
        self.stack.append(v)
        for w in self.units[v].internal if v in self.units else ():
            if w not in self.units:
                continue
            if w not in self.index:
                self.visit(w)
                self.low[v] = min(self.low[v], self.low[w])
            elif w in self.stack:
                self.low[v] = min(self.low[v], self.index[w])
        if self.low[v] == self.index[v]:
            self._close(v)

    def _close(self, v: str) -> None:
        """Pops ``v``'s component off the stack, kept when it is a loop."""
        group: list[str] = []
        while True:
            w = self.stack.pop()
            group.append(w)
            if w == v:
                break
        if len(group) > 1:
            self.found.append(sorted(group))


def violations(
    units: dict[str, Unit],
    may_import: dict[str, frozenset[str]],
    terminal: str,
    may_import_from: Mapping[str, Mapping[str, frozenset[str]]] | None = None,
) -> list[str]:
    """Every broken rule, one line each naming the files: an import outside a unit's allowed set,
    or outside the modules ``may_import_from[unit][other unit]`` allows of it; a unit missing from
    the table, click/rich outside ``terminal``, a cycle between units."""
    problems: list[str] = []
    for name, unit in sorted(units.items()):
        allowed = may_import.get(name)
        if allowed is None:
            problems.append(f"{name}: not in the layering table; say what it may import")
            continue
        for target, files in sorted(unit.internal.items()):
            if "*" not in allowed and target not in allowed:
                problems.append(f"{name} imports {target} ({', '.join(sorted(files))})")
        problems.extend(_outside_modules(unit, (may_import_from or {}).get(name, {})))
        if name != terminal:
            for library in sorted(TERMINAL_LIBRARIES & unit.external.keys()):
                files = unit.external[library]
                problems.append(f"{name} imports {library} ({', '.join(sorted(files))}): only {terminal} may")
    problems.extend(f"cycle: {' ↔ '.join(group)}" for group in cycles(units))
    return problems


def _outside_modules(unit: Unit, narrowed: Mapping[str, frozenset[str]]) -> list[str]:
    """Imports of a narrowed unit's package or of its modules the table does not list."""
    problems = []
    for module, files in sorted(unit.modules.items()):
        target, _, submodule = module.partition(".")
        allowed = narrowed.get(target)
        if allowed is not None and submodule not in allowed:
            only = ", ".join(f"{target}.{m}" for m in sorted(allowed))
            problems.append(f"{unit.name} imports {module} ({', '.join(sorted(files))}): only {only}")
    return problems
