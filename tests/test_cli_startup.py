"""`caplab load` starts without the libraries only some runs need: the study file's models
(pydantic), psycopg and the Prometheus client. Its start-up is part of the CPU a run costs (the
bench compares CPU per request with oha's, start-up included) and of every test that starts
caplab: these imports were 0.27 s of 0.47 s. The names `caplab.spec` and `caplab.collect` load on
first use must still resolve to their modules' objects."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

import caplab.collect
import caplab.spec

DEFERRED = ("pydantic", "psycopg", "prometheus_client")

PROBE = """
import sys
from caplab.cli.app import main
sys.argv = ["caplab", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(" ".join(m for m in {deferred!r} if m in sys.modules), file=sys.stderr)
"""


def loaded_by(*argv: str) -> set[str]:
    """The deferred libraries a fresh `caplab ARGV` process imported."""
    code = PROBE.format(deferred=DEFERRED)
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
    return set(done.stderr.strip().splitlines()[-1].split()) if done.stderr.strip() else set()


def test_load_starts_without_the_study_models_psycopg_or_prometheus() -> None:
    assert loaded_by("load", "--help") == set()
    # A run that needs one loads it: a usage profile is a study-file model.
    assert "pydantic" in loaded_by("load", "http://127.0.0.1:9/", "--usage", "/nonexistent.yaml")


@pytest.mark.parametrize("package", [caplab.spec, caplab.collect])
def test_every_name_a_package_loads_on_first_use_is_its_modules_object(package: ModuleType) -> None:
    table: dict[str, str] = package._WHERE
    assert set(table) <= set(package.__all__)
    for name in package.__all__:
        value = getattr(package, name)
        if name in table:
            assert value is getattr(importlib.import_module(table[name]), name), name
    with pytest.raises(AttributeError):
        package.NoSuchName  # noqa: B018 - the attribute access is the test
