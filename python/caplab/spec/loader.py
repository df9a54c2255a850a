"""Reading a study (or usage profile) file: YAML with line numbers, the factor matrix, each cell
validated and checked; any problem a SpecError naming file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from caplab.spec.checks import (
    check_actions,
    check_counters,
    check_disk_room,
    check_files,
    check_hardware,
    check_hosts,
    check_usage,
)
from caplab.spec.errors import KeyPath, SpecError, line_map, line_of
from caplab.spec.factors import factor_matrix, substitute, with_placement
from caplab.spec.fields import Scalar
from caplab.spec.findings import check_findings
from caplab.spec.load import UsageSpec
from caplab.spec.messages import format_error
from caplab.spec.replicates import ReplicatesSpec
from caplab.spec.study import Cell, Study, StudyConfig

STUDY_NOT_A_MAPPING = "a study file must be a YAML mapping (name:, target:, load: …)"
USAGE_NOT_A_MAPPING = "a usage profile must be a YAML mapping (actions: NAME: {per_hour: …})"


def load_usage(path: str | Path) -> UsageSpec:
    """Reads a usage profile file (``caplab load --usage``: the shape of a study's ``load.usage``,
    ``actions:`` at the top); raises SpecError with ``file:line: field: message``."""
    path = Path(path)
    _, lines, data = _read_mapping(
        path, "a usage profile must be a YAML mapping (actions: NAME: {per_hour: …})"
    )
    try:
        usage = UsageSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(format_error(path, lines, _first_error(e), data, {}, UsageSpec)) from e
    missing = usage.missing_body_file(path.parent)
    if missing is not None:
        line = line_of(lines, ("actions", missing[0], "body_file"))
        raise SpecError(f"{path}:{line}: actions.{missing[0]}.body_file: no such file: {missing[1]}")
    return usage


def load_study(path: str | Path) -> Study:
    """Reads and validates a study file; raises SpecError with ``file:line: field: message``."""
    path = Path(path)
    text, lines, data = _read_mapping(path, STUDY_NOT_A_MAPPING)
    findings_raw = data.pop("findings", None)  # the study's, not a cell's: checked on the matrix
    matrix = _matrix(path, lines, data)
    cells = [_cell(path, lines, data, index, factors) for index, factors in enumerate(matrix)]
    names = list(matrix[0]) if matrix else []
    _check_goal(path, lines, cells, names)
    _check_runs(path, lines, cells)
    findings = check_findings(path, lines, findings_raw, matrix, cells[0].config)
    return Study(
        path=path, text=text, name=cells[0].config.name, factor_names=names, cells=cells, findings=findings
    )


def _read_mapping(path: Path, not_a_mapping: str) -> tuple[str, dict[KeyPath, int], dict[str, Any]]:
    """The file's text, the line of each key path, and its data, which must be a mapping."""
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from e
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 1
        raise SpecError(f"{path}:{line}: YAML syntax error: {e.problem}") from e
    if not isinstance(data, dict) or node is None:
        raise SpecError(f"{path}:1: {not_a_mapping}")
    return text, line_map(node), data


def _first_error(e: ValidationError) -> Any:
    """The error to report: a misspelt key also makes the right one "missing", so the misspelling."""
    errors = e.errors()
    return next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])


def _matrix(path: Path, lines: dict[KeyPath, int], data: dict[str, Any]) -> list[dict[str, Scalar]]:
    """The cells' factor values; ``factors:`` leaves ``data``, and a consolidation study gains its
    ``placement`` factor."""
    factors_raw = data.pop("factors", None)
    if isinstance(data.get("consolidation"), dict):
        factors_raw = with_placement(factors_raw, path, lines)
        data["placement"] = "{placement}"
    try:
        return factor_matrix(factors_raw, "factors")
    except ValueError as e:
        raise SpecError(f"{path}:{lines.get(('factors',), 1)}: {e}") from e


def _cell(
    path: Path, lines: dict[KeyPath, int], data: dict[str, Any], index: int, factors: dict[str, Scalar]
) -> Cell:
    """One cell: the study with its factor values substituted, validated, then checked across fields."""
    try:
        cell_data = substitute(data, factors)
        searching = isinstance(cell_data, dict) and (
            cell_data.get("search") is not None or cell_data.get("job") is not None
        )
        config = StudyConfig.model_validate(cell_data, context={"search": searching})
    except ValidationError as e:
        raise SpecError(format_error(path, lines, _first_error(e), data, factors)) from e
    check_files(path, lines, config)
    check_usage(path, lines, config)
    check_actions(path, lines, config)
    check_hosts(path, lines, config)
    check_hardware(path, lines, config, data, factors)
    check_counters(path, lines, config)
    check_disk_room(path, lines, config)
    return Cell(index, factors, config)


def _check_goal(path: Path, lines: dict[KeyPath, int], cells: list[Cell], names: list[str]) -> None:
    """The goal names factors the study has, sizes for users only when the load is users, and
    rates a phase the job has."""
    goal = cells[0].config.goal if cells else None
    if goal is None:
        return
    for i, name in enumerate(goal.for_each):
        if name not in names:
            line = lines.get(("goal", "for_each", i), lines.get(("goal",), 1))
            known = ", ".join(names) or "none"
            raise SpecError(f"{path}:{line}: goal.for_each: {name!r} is not a factor (the factors: {known})")
    if goal.users is not None and any(c.config.requests[1].open_model for c in cells):
        line = lines.get(("goal", "users"), lines.get(("goal",), 1))
        raise SpecError(
            f"{path}:{line}: goal.users: the study's load is a rate (open model): give goal.rate, or "
            "load users (a search: for the most users) to size for users"
        )
    if goal.phase is not None:
        job = cells[0].config.job
        phases = [p.name for p in job.phases] if job else []
        if goal.phase not in phases:
            line = lines.get(("goal", "phase"), lines.get(("goal",), 1))
            what = f"the job's phases: {', '.join(phases)}" if phases else "the study has no job:"
            raise SpecError(f"{path}:{line}: goal.phase: {goal.phase!r} is not a phase of the job ({what})")


def _check_runs(path: Path, lines: dict[KeyPath, int], cells: list[Cell]) -> None:
    """The run order is the study's, one for all its cells; replicates until an interval is narrow
    enough need an interval, which is a searched capacity's."""
    for key in ("order", "seed"):
        if len({repr(getattr(c.config, key)) for c in cells}) > 1:
            line = lines.get((key,), 1)
            raise SpecError(
                f"{path}:{line}: {key}: the study's own, the same for every cell: it names no factor"
            )
    for cell in cells:
        config = cell.config
        if isinstance(config.replicates, ReplicatesSpec) and config.search is None:
            line = line_of(lines, ("replicates", "until"))
            raise SpecError(
                f"{path}:{line}: replicates.until: the interval it waits for is a searched capacity's: "
                "add search: (a fixed load's throughput has none), or give replicates a count"
            )
