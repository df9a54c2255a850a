"""The factor matrix: each factor's values, a ``zip:`` group moving together, their product the
cells; ``{factor}`` references substituted into each cell's copy of the study."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from caplab.spec.errors import KeyPath, SpecError
from caplab.spec.fields import Scalar

FACTOR_REF = re.compile(r"\{(\w+)\}")


def with_placement(factors: Any, path: Path, lines: dict[KeyPath, int]) -> Any:
    """A consolidation study's factors with ``placement: [apart, together]`` added."""
    factors = dict(factors) if isinstance(factors, dict) else {} if factors is None else factors
    if isinstance(factors, dict) and "placement" in factors:
        line = lines.get(("factors", "placement"), 1)
        raise SpecError(f"{path}:{line}: factors.placement: consolidation: adds this factor itself")
    if isinstance(factors, dict):
        factors["placement"] = ["apart", "together"]
    return factors


def factor_matrix(factors: Any, where: str) -> list[dict[str, Scalar]]:
    """The cells: the product of each factor's values, a ``zip:`` group moving together."""
    if factors is None:
        return [{}]
    if not isinstance(factors, dict):
        raise ValueError(f"{where}: must be a mapping of factor name to a list of values")
    dims: list[list[dict[str, Scalar]]] = []
    for name, values in factors.items():
        if name == "zip":
            dims.append(_zip_group(values, f"{where}.zip"))
            continue
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.{name}: must be a non-empty list of values")
        _check_scalars(values, f"{where}.{name}")
        dims.append([{name: v} for v in values])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*dims)]


def _zip_group(group: Any, where: str) -> list[dict[str, Scalar]]:
    if not isinstance(group, dict) or not group:
        raise ValueError(f"{where}: must map factor names to lists of equal length")
    lengths = {name: len(v) if isinstance(v, list) else -1 for name, v in group.items()}
    if min(lengths.values()) < 1 or len(set(lengths.values())) != 1:
        raise ValueError(f"{where}: lists must be non-empty and of equal length (got {lengths})")
    for name, values in group.items():
        _check_scalars(values, f"{where}.{name}")
    names = list(group)
    return [dict(zip(names, row, strict=True)) for row in zip(*(group[n] for n in names), strict=True)]


def _check_scalars(values: list[Any], where: str) -> None:
    for v in values:
        if not isinstance(v, Scalar):
            raise ValueError(f"{where}: values must be numbers or strings, got {v!r}")


def substitute(value: Any, factors: dict[str, Scalar]) -> Any:
    """Replaces ``{factor}`` references; a string that is only a reference takes the factor's type."""
    if isinstance(value, str):
        whole = FACTOR_REF.fullmatch(value)
        if whole and whole.group(1) in factors:
            return factors[whole.group(1)]
        return FACTOR_REF.sub(
            lambda m: str(factors[m.group(1)]) if m.group(1) in factors else m.group(0), value
        )
    if isinstance(value, dict):
        return {k: substitute(v, factors) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, factors) for v in value]
    return value


def cell_note(raw: Any, cell: dict[str, Scalar]) -> str:
    """`` (in the cell where rate=100)`` when the value a problem is in refers to a factor, so the
    author knows which of the cells failed; else nothing."""
    refers = isinstance(raw, str) and any(m.group(1) in cell for m in FACTOR_REF.finditer(raw))
    return f" (in the cell where {', '.join(f'{k}={v}' for k, v in cell.items())})" if refers else ""
