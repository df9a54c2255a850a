"""`caplab export`: a stored study as files other tools read.

- ``csv`` / ``parquet``: a directory with ``cells``, ``trials``, ``intervals`` and ``resources``
  (the frames of ``caplab.results``) and ``study.json`` (name, spec, environment, events), so the
  directory describes itself.
- ``json``: the whole study document (``Store.study_document``: every trial's result object,
  interval series and histograms included) as one file, or on stdout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO, get_args

from caplab.store import frames as results
from caplab.store.repository import Store

if TYPE_CHECKING:  # pandas is imported where a table is made: it costs every `caplab` start 0.4 s
    import pandas as pd

Format = Literal["csv", "parquet", "json"]
FORMATS: tuple[str, ...] = get_args(Format)
TABLES = ("cells", "trials", "intervals", "resources")


def default_directory(study_id: int) -> Path:
    return Path(f"study-{study_id}")


def _file_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns that a flat file cannot hold as they are (lists, dicts, a mix of types, as a
    factor may be) become JSON text."""
    import pandas as pd

    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if column.dtype != object:
            continue
        kinds = {type(v) for v in column if v is not None and not (isinstance(v, float) and pd.isna(v))}
        if len(kinds) > 1 or kinds & {list, dict, tuple}:
            out[name] = [None if v is None else json.dumps(v, default=str) for v in column]
    return out


def write_tables(store: Store, study_id: int, fmt: Literal["csv", "parquet"], directory: Path) -> list[Path]:
    """Writes the study's tables into ``directory`` (created if needed); returns the files."""
    r = results.read(store, study_id)
    directory.mkdir(parents=True, exist_ok=True)
    frames = {"cells": r.cells, "trials": r.trials, "intervals": r.intervals, "resources": r.resources}
    written = []
    for name in TABLES:
        path = directory / f"{name}.{fmt}"
        frame = _file_safe(frames[name])
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    doc = store.study_document(study_id)
    about = {"study": doc.study.to_json(), "factors": r.factors, "events": [e.to_json() for e in doc.events]}
    path = directory / "study.json"
    path.write_text(json.dumps(about, indent=2) + "\n")
    written.append(path)
    return written


def write_document(doc: Mapping[str, object], out: Path | TextIO) -> None:
    """The study document as JSON, to a file or an open stream."""
    if isinstance(out, Path):
        with out.open("w") as f:
            json.dump(doc, f)
            f.write("\n")
    else:
        json.dump(doc, out)
        out.write("\n")


def export_study(store: Store, study_id: int, fmt: str, out: Path | None, stdout: TextIO) -> Sequence[Path]:
    """Exports one study; csv/parquet default to ``./study-ID/``, json to ``stdout``."""
    if fmt == "json":
        write_document(store.study_document(study_id).to_json(), out if out is not None else stdout)
        return [out] if out is not None else []
    directory = out or default_directory(study_id)
    if fmt == "csv":
        return write_tables(store, study_id, "csv", directory)
    if fmt == "parquet":
        return write_tables(store, study_id, "parquet", directory)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
