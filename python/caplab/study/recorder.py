"""The store step: where a cell's trials, events and outcome go, and the figures its metrics are
made of. The runner and a cell's run write through a `CellRecorder`, so what a cell leaves in the
store is written in one place, in the shape the report reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from caplab.analysis.failover import Verdict, success_rate
from caplab.collect import cell_resources
from caplab.experiments.base import TrialRecord
from caplab.experiments.capacity import combine_replicates
from caplab.json_types import JsonDict, JsonObject, items, member
from caplab.store import CellRow, Store
from caplab.study.metrics import cell_metrics
from caplab.study.plan import CellPlan


class CellRecorder:
    """One cell's row in the study's store."""

    def __init__(self, store: Store, study_id: int, row: CellRow) -> None:
        self.store = store
        self.study_id = study_id
        self.row = row

    def begin(self) -> None:
        """Marks the cell running; an earlier attempt's trials would mix with this one's, so they go."""
        if self.row.status != "pending":
            self.store.reset_cell(self.row.id)
        self.store.set_cell_status(self.row.id, "running")

    def trial(self, index: int, record: TrialRecord, status: str) -> None:
        self.store.save_trial(
            self.row.id, index, record.result, record.samples, kind=record.kind, status=status
        )

    def event(self, kind: str, line: str) -> None:
        self.store.add_event(self.study_id, kind, line, cell_id=self.row.id)

    def complete(self, metrics: JsonObject, resources: JsonObject) -> None:
        self.store.set_cell_status(self.row.id, "complete", metrics=metrics, resources=resources)

    def failed(self, reason: str, metrics: JsonObject | None) -> None:
        self.store.set_cell_status(self.row.id, "failed", error=reason, metrics=metrics)
        self.event("cell_failed", reason)

    def interrupted(self) -> None:
        self.store.set_cell_status(self.row.id, "interrupted", error="interrupted by Ctrl-C")


def cell_figures(
    plan: CellPlan,
    records: list[TrialRecord],
    summaries: Sequence[JsonObject],
    hardware: JsonObject | None,
    volume_baseline: Mapping[str, JsonObject],
) -> tuple[JsonDict, JsonObject]:
    """A complete cell's metrics and resources: the trials' figures, what its experiment summed up
    over the replicates, the failovers' success rate, its hardware and its price."""
    metrics: JsonDict = {**cell_metrics([r.result for r in records]), **combine_replicates(summaries)}
    if judged := _failovers_judged(metrics):
        metrics["success"] = success_rate(judged).as_dict()  # k/K over the cell's failovers
    if hardware is not None:
        baseline = {"volume_baseline": volume_baseline} if volume_baseline else {}
        metrics["hardware"] = {**hardware, **baseline}
    metrics["placement"] = plan.hardware.placement.to_json()
    resources = _resources(plan, records, metrics)
    if "app" in resources:
        metrics["app"] = resources["app"]  # what the SUT says it did, beside what caplab saw
    metrics |= dict(plan.prices)
    return metrics, resources


def _failovers_judged(metrics: JsonObject) -> list[tuple[str, Verdict]]:
    """Each failover the cell judged, by its trial, for the cell's k/K."""
    judged = []
    for failover in items(metrics, "failover"):
        if isinstance(failover, Mapping) and "verdict" in failover:
            verdict = member(failover, "verdict")
            reasons = [str(r) for r in items(verdict, "reasons")]
            trial = failover.get("trial")
            # Labelled by the trial's number as a reader counts: the entry's 0-based place + 1.
            label = str(trial + 1) if isinstance(trial, int) else str(trial)
            judged.append((label, Verdict(bool(verdict.get("success")), reasons)))
    return judged


def _resources(plan: CellPlan, records: list[TrialRecord], metrics: JsonDict) -> JsonObject:
    """The cell's resources over its measured window; a job's are its phases', sampled by the job
    (and taken out of its outcome, so they are stored once)."""
    if plan.experiment.kind == "job":
        job = metrics.get("job")
        return job.pop("resources", {}) if isinstance(job, dict) else {}
    samples = [s for r in records for s in r.samples]
    return cell_resources(samples, *plan.experiment.window)


def partial_figures(records: list[TrialRecord], hardware: JsonObject | None) -> JsonDict | None:
    """A failed cell's metrics: those of any trials it completed, and its hardware."""
    metrics: JsonDict | None = cell_metrics([r.result for r in records]) if records else None
    if hardware is not None:
        metrics = {**(metrics or {}), "hardware": hardware}
    return metrics
