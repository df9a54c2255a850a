"""The run profiles: stage (source → connector space), sync (connector space → metaverse → export)
and export (pending exports → their targets). Each commits in batches: one transaction holds a
batch's rows, its change-log rows and its counter increments, so the counters never disagree with
the data and a run stopped halfway leaves whole batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from caplab.systems.idsync import rules
from caplab.systems.idsync.exporters import Exporter, ExportRow
from caplab.systems.idsync.sources import Source
from caplab.systems.idsync.store import FILTERED, STAGED, SYNCED, Store

BATCH = 1000
Progress = Callable[[], None]
"""Called after every committed batch (the metrics file is refreshed there)."""

STAGE = """
INSERT INTO connector_space (ma, anchor, join_key, attributes, state) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (ma, anchor) DO UPDATE SET
    join_key = excluded.join_key,
    attributes = excluded.attributes,
    state = CASE WHEN connector_space.attributes = excluded.attributes
                 THEN connector_space.state ELSE excluded.state END
"""
PROVISION = """
INSERT INTO export (target, mv_id, dn, attributes, exported) VALUES (?, ?, ?, ?, 0)
ON CONFLICT (target, mv_id) DO UPDATE SET
    dn = excluded.dn,
    attributes = excluded.attributes,
    exported = CASE WHEN export.attributes = excluded.attributes AND export.dn = excluded.dn
                    THEN export.exported ELSE 0 END
"""
NEXT_BATCH = """
SELECT ma, anchor, join_key, attributes FROM connector_space
WHERE state = ? AND (ma, anchor) > (?, ?) ORDER BY ma, anchor LIMIT ?
"""


@dataclass(frozen=True)
class SyncResult:
    synced: int
    projected: int
    joined: int
    filtered: int
    exported: int


def stage(store: Store, source: Source, progress: Progress | None = None) -> int:
    """Reads every object of ``source`` into its connector space; returns how many. Staging the
    same objects again changes nothing (an unchanged object keeps its sync state)."""
    staged = 0
    for page in source.pages():
        if not page:
            continue
        rows = [
            (source.name, o.anchor, rules.join_key(o.attributes), as_json(o.attributes), STAGED) for o in page
        ]
        with store.transaction():
            store.executemany(STAGE, rows)
            store.log_changes([("staged", source.name, o.anchor, None) for o in page])
            store.add_to_counter("staged", len(page))
        staged += len(page)
        if progress:
            progress()
    return staged


def sync(
    store: Store,
    exporters: Sequence[Exporter],
    progress: Progress | None = None,
    batch: int = BATCH,
    defer: bool = False,
) -> SyncResult:
    """Joins or projects every staged object, flows its attributes and provisions it to each
    export target; incremental targets are written after each batch, the others at the end.
    ``defer``: provision only, and leave the writing to ``export`` (MIIS's own split: a sync run
    fills the target's connector space, an export run writes it out)."""
    projected = joined = filtered = exported = 0
    last: tuple[str, str] = ("", "")
    while rows := store.rows(NEXT_BATCH, (STAGED, *last, batch)):
        last = (rows[-1][0], rows[-1][1])
        with store.transaction():
            outcome = sync_batch(store, rows, [e.target for e in exporters])
        projected, joined, filtered = projected + outcome[0], joined + outcome[1], filtered + outcome[2]
        for exporter in exporters:
            if exporter.incremental and not defer:
                exported += export_pending(store, exporter)
        if progress:
            progress()
    for exporter in exporters:
        if not exporter.incremental and not defer:
            exported += export_all(store, exporter)
    if progress:
        progress()
    return SyncResult(projected + joined + filtered, projected, joined, filtered, exported)


def sync_batch(store: Store, rows: list[tuple[Any, ...]], targets: Sequence[str]) -> tuple[int, int, int]:
    """One batch inside the caller's transaction: (projected, joined, filtered)."""
    projected = joined = filtered = 0
    states: list[tuple[int | None, int, str, str]] = []
    provisioned: list[tuple[str, int, str, str]] = []
    changes: list[tuple[str, str | None, str | None, int | None]] = []
    for ma, anchor, key, attributes in rows:
        if key is None:
            states.append((None, FILTERED, ma, anchor))
            filtered += 1
            continue
        flowed = rules.import_flow(json.loads(attributes))
        found = store.execute(
            "SELECT id, attributes FROM metaverse WHERE employee_number = ?", (key,)
        ).fetchone()
        if found is None:
            person = {**flowed, "employeeNumber": key}
            mv_id = int(store.scalar(
                "INSERT INTO metaverse (employee_number, attributes) VALUES (?, ?) RETURNING id",
                (key, as_json(person)),
            ))  # fmt: skip
            changes.append(("projected", ma, anchor, mv_id))
            projected += 1
        else:
            mv_id, person = int(found[0]), {**json.loads(found[1]), **flowed}
            store.execute("UPDATE metaverse SET attributes = ? WHERE id = ?", (as_json(person), mv_id))
            changes.append(("joined", ma, anchor, mv_id))
            joined += 1
        dn, exported = rules.provision(person)
        provisioned += [(target, mv_id, dn, as_json(exported)) for target in targets]
        changes += [("provisioned", target, dn, mv_id) for target in targets]
        states.append((mv_id, SYNCED, ma, anchor))
    store.executemany(PROVISION, provisioned)
    store.executemany("UPDATE connector_space SET mv_id = ?, state = ? WHERE ma = ? AND anchor = ?", states)
    store.log_changes(changes)
    store.add_to_counter("synced", len(rows))
    return projected, joined, filtered


def export(store: Store, exporters: Sequence[Exporter], progress: Progress | None = None) -> int:
    """Writes what sync provisioned and no run has written yet; returns how many rows."""
    written = 0
    for exporter in exporters:
        written += export_pending(store, exporter) if exporter.incremental else export_all(store, exporter)
        if progress:
            progress()
    return written


def export_pending(store: Store, exporter: Exporter) -> int:
    """Writes the target's rows not yet exported, then records them as exported."""
    pending = store.rows(
        "SELECT mv_id, dn, attributes FROM export WHERE target = ? AND exported = 0 ORDER BY mv_id",
        (exporter.target,),
    )
    exporter.write([(dn, json.loads(attributes)) for _, dn, attributes in pending])
    mark_exported(store, exporter.target, [int(mv_id) for mv_id, _, _ in pending])
    return len(pending)


def export_all(store: Store, exporter: Exporter) -> int:
    """A whole-file target: every row of it written at once; the pending ones then recorded."""
    rows = store.rows(
        "SELECT mv_id, dn, attributes, exported FROM export WHERE target = ? ORDER BY mv_id",
        (exporter.target,),
    )
    written: list[ExportRow] = [(dn, json.loads(attributes)) for _, dn, attributes, _ in rows]
    exporter.write(written)
    pending = [int(mv_id) for mv_id, _, _, exported in rows if not exported]
    mark_exported(store, exporter.target, pending)
    return len(pending)


def mark_exported(store: Store, target: str, mv_ids: list[int]) -> None:
    if not mv_ids:
        return
    with store.transaction():
        store.executemany(
            "UPDATE export SET exported = 1 WHERE target = ? AND mv_id = ?", [(target, i) for i in mv_ids]
        )
        store.log_changes([("exported", target, None, i) for i in mv_ids])
        store.add_to_counter("exported", len(mv_ids))


def as_json(value: object) -> str:
    """Sorted keys, so an unchanged object serialises to the same text (staging compares texts)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
