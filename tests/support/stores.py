"""Helpers shared by the store's tests: sample data, a filled study, JSON comparison."""

from __future__ import annotations

import json
from dataclasses import dataclass

from caplab.collect.base import ResourceSample
from caplab.engine import RunResult
from caplab.store import Store


def samples_for(result: RunResult) -> list[ResourceSample]:
    """Resource samples on the trial's clock, as the collectors would take them."""
    return [
        ResourceSample(i.end_s, scope, metric, float(n + i.index))
        for i in result.intervals
        for n, (scope, metric) in enumerate(
            [("host", "cpu_percent"), ("role:app", "rss_mb"), ("disk:sda", "busy_percent")]
        )
    ]


@dataclass
class Filled:
    """A study with two cells, the first with two saved trials, and an event."""

    study_id: int
    cell_ids: list[int]
    trial_ids: list[int]


def fill(store: Store, result: RunResult, environment: dict[str, object] | None = None) -> Filled:
    study_id = store.create_study(
        "checkout", "name: checkout\nfactors: {workers: [1, 2]}\n", "study.yaml", environment or {"host": "x"}
    )
    cells = store.add_cells(study_id, [{"workers": 1}, {"workers": 2}])
    store.set_cell_status(cells[0].id, "running")
    trial_ids = [store.save_trial(cells[0].id, i, result, samples_for(result)) for i in range(2)]
    metrics = {
        "throughput": result.throughput,
        "latency_ms": {"p99": result.latency_ms.p99},
        "error_ratio": 0.0,
    }
    store.set_cell_status(cells[0].id, "complete", metrics=metrics, resources={"host": {"cpu_percent": 42.0}})
    store.set_cell_status(cells[1].id, "failed", error="SUT exited with status 3")
    store.add_event(study_id, "cell_failed", "SUT exited with status 3", cell_id=cells[1].id)
    store.finish_study(study_id, "failed")
    return Filled(study_id, [c.id for c in cells], trial_ids)


def same_json(a: object, b: object) -> bool:
    """Equal as JSON documents: key order and float formatting do not count."""
    same: bool = json.loads(json.dumps(a, sort_keys=True)) == json.loads(json.dumps(b, sort_keys=True))
    return same
