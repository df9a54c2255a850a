"""The notebook API: a stored study as pandas DataFrames.

    from caplab import results
    r = results.load("latest")            # or a study id, or a study name; db="postgresql://…"
    r.cells.plot(x="workers", y="throughput")
    r.intervals.groupby("cell_index").throughput.std()

Every frame carries ``cell_index`` (and the trial frames ``trial_index``/``trial_kind``/``trial_id``)
plus the cell's factor columns, so frames can be grouped by factor without a join. Nested figures
are flattened with their unit kept last: ``latency_ms: {p99: …}`` becomes ``latency_p99_ms``;
other nesting joins with a dot (``generator.cpu_s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from caplab.json_types import as_object
from caplab.store.repository import Store, StudyRow

if TYPE_CHECKING:  # pandas is imported where a frame is made: it costs every `caplab` start 0.4 s
    import pandas as pd

__all__ = ["Results", "flatten", "load", "read"]

_UNITS = ("_ms", "_us", "_s")
_TRIAL_KEYS = ["cell_index", "trial_index", "trial_kind", "trial_id"]
_INTERVAL_COLUMNS = [
    "interval",
    "start_s",
    "end_s",
    "warmup",
    "sent",
    "completed",
    "errors",
    "dropped",
    "in_flight",
    "throughput",
    "latency_count",
    "min_ms",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
]
_TRIAL_COLUMNS = [
    "status",
    "model",
    "offered_rate",
    "users",
    "duration_s",
    "sent",
    "completed",
    "errors",
    "dropped",
    "throughput",
    "started_at",
]
_RESOURCE_COLUMNS = ["t", "scope", "metric", "value"]


@dataclass(frozen=True)
class Results:
    """One study's figures: a row per cell, per trial, per interval, per resource sample."""

    study: StudyRow
    factors: list[str]
    cells: pd.DataFrame
    trials: pd.DataFrame
    intervals: pd.DataFrame
    resources: pd.DataFrame
    """Long format: one row per (trial, t, scope, metric) with its value."""


Columns: TypeAlias = dict[str, object]
"""One row of a frame: column name → value (a number, a text, a factor's level as written)."""


def flatten(data: Mapping[str, object], prefix: str = "") -> Columns:
    """Nested dicts as flat columns, the unit suffix kept at the end of the name."""
    flat: Columns = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            unit = next((u for u in _UNITS if name.endswith(u)), None)
            if unit is not None:
                stem = name.removesuffix(unit)
                # A count has no unit: latency_ms.count is latency_count.
                flat.update(
                    {
                        f"{stem}_{k}" if k == "count" else f"{stem}_{k}{unit}": v
                        for k, v in flatten(as_object(value)).items()
                    }
                )
            else:
                flat.update(flatten(as_object(value), prefix=f"{name}."))
        else:
            flat[name] = value
    return flat


def _merge(row: Columns, extra: Mapping[str, object], clash_prefix: str) -> None:
    """Adds ``extra`` to ``row``; a name already taken gets ``clash_prefix`` in front."""
    for key, value in extra.items():
        row[f"{clash_prefix}{key}" if key in row else key] = value


def _frame(rows: list[Columns], leading: Iterable[str]) -> pd.DataFrame:
    """A frame whose leading columns exist (and come first) even when there are no rows."""
    import pandas as pd

    first = list(leading)
    columns = first + [c for r in rows for c in r if c not in first]
    return pd.DataFrame(rows, columns=list(dict.fromkeys(columns)))


def _factor_columns(factors: Mapping[str, object], taken: Iterable[str]) -> Columns:
    used = set(taken)
    return {f"factor.{k}" if k in used else k: v for k, v in factors.items()}


def load(study_id: int | str = "latest", db: str | None = None) -> Results:
    """Loads a study (an id, ``latest`` or a name) from the store at ``db`` (default as the CLI:
    ``$CAPLAB_DB`` or ``./caplab.db``)."""
    with Store(db) as store:
        return read(store, study_id if isinstance(study_id, int) else store.resolve_study(study_id))


def read(store: Store, study_id: int) -> Results:
    """The frames of one study from an open store."""
    study = store.study(study_id)
    cells = store.cells(study_id)
    trials = store.trial_rows(study_id)
    intervals = store.interval_rows(study_id)
    samples = store.resource_samples(study_id)
    names = list(dict.fromkeys(k for c in cells for k in c.factors))
    factors_of = {c.index: c.factors for c in cells}

    cell_rows: list[Columns] = []
    for c in cells:
        row: Columns = {"cell_index": c.index, **c.factors, "status": c.status, "error": c.error}
        _merge(row, flatten(c.metrics or {}), "metrics.")
        _merge(row, flatten(c.resources or {}), "resources.")
        cell_rows.append(row)

    def keyed(r: Mapping[str, object], columns: list[str]) -> Columns:
        row = {k: r[k] for k in _TRIAL_KEYS}
        cell_index = r["cell_index"]
        factors = factors_of.get(cell_index, {}) if isinstance(cell_index, int) else {}
        row.update(_factor_columns(factors, [*_TRIAL_KEYS, *columns]))
        return row

    trial_rows: list[Columns] = []
    for trial in trials:
        t: Mapping[str, object] = trial
        row = keyed(t, _TRIAL_COLUMNS)
        row.update({k: t[k] for k in _TRIAL_COLUMNS})
        summary = {k: v for k, v in trial["summary"].items() if k != "classes"}
        _merge(row, {k: v for k, v in flatten(summary).items() if k not in _TRIAL_COLUMNS}, "summary.")
        trial_rows.append(row)

    interval_rows: list[Columns] = []
    for interval in intervals:
        i: Mapping[str, object] = interval
        row = keyed(i, _INTERVAL_COLUMNS)
        row.update({"interval": i["idx"], **{k: i[k] for k in _INTERVAL_COLUMNS[1:]}})
        interval_rows.append(row)

    resource_rows: list[Columns] = []
    for sample in samples:
        s: Mapping[str, object] = sample
        row = keyed(s, _RESOURCE_COLUMNS)
        row.update({k: s[k] for k in _RESOURCE_COLUMNS})
        resource_rows.append(row)

    return Results(
        study=study,
        factors=names,
        cells=_frame(cell_rows, ["cell_index", *names, "status", "error"]),
        trials=_frame(trial_rows, [*_TRIAL_KEYS, *names, *_TRIAL_COLUMNS]),
        intervals=_frame(interval_rows, [*_TRIAL_KEYS, *names, *_INTERVAL_COLUMNS]),
        resources=_frame(resource_rows, [*_TRIAL_KEYS, *names, *_RESOURCE_COLUMNS]),
    )
