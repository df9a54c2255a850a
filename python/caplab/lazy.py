"""A package's names loaded on first use (PEP 562's module ``__getattr__``).

`caplab load` imports a few names of ``caplab.spec`` and ``caplab.collect``; importing either
package ran every module it re-exports — pydantic's models, psycopg, the node_exporter's parser —
0.27 s of the 0.47 s of CPU a `caplab load` spent before its first request, also in every test
that starts caplab. A package keeps its imports under ``TYPE_CHECKING`` (for the type checker and
the reader) and gives `on_first_use` a table of where each name lives.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def on_first_use(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` for ``package``: a name in ``where`` (name → module) is imported from
    its module the first time it is asked for, and kept in the package, so the next lookup is a
    plain attribute."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
