"""caplab's shape, as a test: the first-level packages import along the data flow
(spec → study → experiments ‖ collect → store → analysis → report; cli on top), never in a loop;
grammar, the study file's SLO and trigger syntax, sits below both spec (which checks the texts)
and analysis (which evaluates them); analysis stays pure; spec computes nothing; only cli talks to
the terminal; the reference systems stand alone."""

from __future__ import annotations

from pathlib import Path

import pytest

import caplab
from support.layering import imports_of, violations

PACKAGE = Path(caplab.__file__).parent

MAY_IMPORT: dict[str, frozenset[str]] = {
    "_engine": frozenset(),
    "units": frozenset(),
    "lazy": frozenset(),  # a package's names loaded on first use (PEP 562)
    # JSON's type names: a leaf, so experiments (which write outcomes) and store (which reads them)
    # share them without importing each other.
    "json_types": frozenset(),
    "grammar": frozenset({"units"}),
    "engine": frozenset({"_engine", "units"}),
    "cluster": frozenset({"engine", "units"}),
    "analysis": frozenset({"engine", "grammar", "units"}),
    "spec": frozenset({"grammar", "lazy", "profiles", "units"}),
    "collect": frozenset({"engine", "lazy", "units"}),
    "store": frozenset({"collect", "engine", "json_types", "units"}),
    "results": frozenset({"store"}),
    "experiments": frozenset(
        {"analysis", "cluster", "collect", "engine", "json_types", "spec", "units", "workloads"}
    ),
    "study": frozenset(
        {
            "analysis",
            "collect",
            "engine",
            "experiments",
            "json_types",
            "profiles",
            "spec",
            "store",
            "units",
            "workloads",
        }
    ),
    "report": frozenset({"analysis", "collect", "engine", "json_types", "store", "units"}),
    # The live page (`--web`): shows the study's observer stream, masks passwords as the store does.
    "live": frozenset({"collect", "engine", "json_types", "spec", "store", "units"}),
    "profiles": frozenset({"_engine", "units"}),
    "workloads": frozenset(),
    "systems": frozenset(),
    "studies": frozenset(),
    "dashboards": frozenset(),  # data files (the Grafana dashboard) and their readers
    "cli": frozenset({"*"}),
}
"""What each first-level unit may import. A new unit must be added here: deciding where it sits
is part of adding it."""

MAY_IMPORT_FROM: dict[str, dict[str, frozenset[str]]] = {
    "analysis": {"engine": frozenset({"result"})},
}
"""Where a unit may import only some modules of another: analysis reads the engine's result types,
never its plans, builder or package. (The spec imports no analysis at all: it checks a study's SLO
and trigger texts with grammar, the syntax analysis evaluates.)"""


def test_caplab_follows_its_layering() -> None:
    assert violations(imports_of(PACKAGE), MAY_IMPORT, terminal="cli", may_import_from=MAY_IMPORT_FROM) == []


def test_failover_is_an_experiment_like_the_others() -> None:
    """A failover trial is read in experiments/failover.py alone (actions' recovery, per-database
    series, ledger, verdict): the study and `caplab failover` both call it, so the two cannot drift
    apart again into two meanings of "lost" or two numberings of trials."""
    assert not (PACKAGE / "study" / "failover.py").exists()
    units = imports_of(PACKAGE)
    assert "cli/failover.py" in units["cli"].modules.get("experiments.failover", set())
    assert "study/cell.py" in units["study"].modules.get("experiments.failover", set())  # CellRun.trial


ENGINE = {
    name: "" for name in ("engine/__init__.py", "engine/plan.py", "engine/result.py", "engine/build.py")
}
"""A package whose modules a narrowing rule names."""


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
        (
            {"analysis/backlog.py": "from pkg.engine.plan import Plan\n", **ENGINE},
            "analysis imports engine.plan (analysis/backlog.py): only engine.result",
        ),
        (
            {"analysis/steady.py": "from pkg.engine import RunResult\n", **ENGINE},
            "analysis imports engine (analysis/steady.py): only engine.result",
        ),
        (
            {"analysis/steady.py": "from ..engine import build\n", **ENGINE},
            "analysis imports engine.build (analysis/steady.py): only engine.result",
        ),
        (
            {"spec/search.py": "from pkg.analysis.slo import parse_slo\n", "analysis/slo.py": ""},
            "spec imports analysis (spec/search.py)",
        ),
        (
            {"grammar/slo.py": "from pkg.analysis import slo\n", "analysis/slo.py": ""},
            "grammar imports analysis (grammar/slo.py)",
        ),
        (
            {"spec/study.py": "from pkg.store import Store\n", "store/__init__.py": ""},
            "spec imports store (spec/study.py)",
        ),
    ],
)
def test_a_broken_rule_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    rules = {name: frozenset({"*"}) for name in ("a", "b", "c", "cli", "engine")} | {
        "analysis": frozenset({"engine"}),
        "store": frozenset(),
        "report": frozenset({"*"}),
        "systems": frozenset(),
        "spec": frozenset({"grammar", "profiles", "units"}),
        "grammar": frozenset({"units"}),
    }
    narrowed = {"analysis": {"engine": frozenset({"result"})}}
    problems = violations(imports_of(write(tmp_path, files)), rules, terminal="cli", may_import_from=narrowed)
    assert any(expected in p for p in problems), problems


def test_the_rules_hold_for_a_tree_that_keeps_them(tmp_path: Path) -> None:
    files = {
        "analysis/slo.py": "import math\n",
        "analysis/steady.py": "from pkg.engine.result import RunResult\nfrom ..engine import result\n",
        "cli/x.py": "import click\nfrom pkg.analysis import slo\nfrom pkg.engine import Plan\n",
        **ENGINE,
    }
    rules = {"analysis": frozenset({"engine"}), "cli": frozenset({"*"}), "engine": frozenset()}
    narrowed = {"analysis": {"engine": frozenset({"result"})}}
    assert (
        violations(imports_of(write(tmp_path, files)), rules, terminal="cli", may_import_from=narrowed) == []
    )
