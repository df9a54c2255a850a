"""caplab's shape, as a test: the first-level packages import along the data flow
(spec → study → experiments ‖ collect → store → analysis → report; cli on top), never in a loop;
analysis stays pure; only cli talks to the terminal; the reference systems stand alone."""

from __future__ import annotations

from pathlib import Path

import pytest

import caplab
from support.layering import imports_of, violations

PACKAGE = Path(caplab.__file__).parent

MAY_IMPORT: dict[str, frozenset[str]] = {
    "_engine": frozenset(),
    "units": frozenset(),
    "engine": frozenset({"_engine", "units"}),
    "cluster": frozenset({"engine", "units"}),
    "analysis": frozenset({"engine", "units"}),
    "spec": frozenset({"analysis", "profiles", "units"}),
    "collect": frozenset({"engine", "units"}),
    "store": frozenset({"collect", "engine", "units"}),
    "results": frozenset({"store"}),
    "experiments": frozenset({"analysis", "cluster", "collect", "engine", "spec", "units"}),
    "study": frozenset(
        {"analysis", "collect", "engine", "experiments", "profiles", "spec", "store", "units", "workloads"}
    ),
    "report": frozenset({"analysis", "collect", "engine", "store", "units"}),
    "profiles": frozenset({"_engine", "units"}),
    "workloads": frozenset(),
    "systems": frozenset(),
    "studies": frozenset(),
    "cli": frozenset({"*"}),
}
"""What each first-level unit may import. A new unit must be added here: deciding where it sits
is part of adding it."""


def test_caplab_follows_its_layering() -> None:
    assert violations(imports_of(PACKAGE), MAY_IMPORT, terminal="cli") == []


def write(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"analysis/slo.py": "from pkg.store.repository import Store\n", "store/repository.py": ""},
            "analysis imports store (analysis/slo.py)",
        ),
        (
            {"analysis/slo.py": "def f():\n    from ..store import repository\n", "store/__init__.py": ""},
            "analysis imports store (analysis/slo.py)",
        ),
        ({"report/html.py": "import rich.table\n"}, "report imports rich (report/html.py): only cli may"),
        ({"systems/x.py": "from pkg import store\n", "store/__init__.py": ""}, "systems imports store"),
        ({"newthing.py": ""}, "newthing: not in the layering table"),
        (
            {"a/m.py": "import pkg.b.n\n", "b/n.py": "from pkg.c import q\n", "c/q.py": "import pkg.a\n"},
            "cycle: a ↔ b ↔ c",
        ),
    ],
)
def test_a_broken_rule_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    rules = {name: frozenset({"*"}) for name in ("a", "b", "c", "cli")} | {
        "analysis": frozenset(),
        "store": frozenset(),
        "report": frozenset({"*"}),
        "systems": frozenset(),
    }
    problems = violations(imports_of(write(tmp_path, files)), rules, terminal="cli")
    assert any(expected in p for p in problems), problems


def test_the_rules_hold_for_a_tree_that_keeps_them(tmp_path: Path) -> None:
    files = {"analysis/slo.py": "import math\n", "cli/x.py": "import click\nfrom pkg.analysis import slo\n"}
    rules = {"analysis": frozenset(), "cli": frozenset({"*"})}
    assert violations(imports_of(write(tmp_path, files)), rules, terminal="cli") == []
