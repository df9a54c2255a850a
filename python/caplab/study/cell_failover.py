"""Actions during a trial, the load's recovery from them, the ledger and the failover verdict:
the runner's failover section, carried here as it was (its one home is to be
``experiments/failover.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caplab.analysis.recovery import Interval
from caplab.experiments.actions import ActionOutcome, TrialActions, recoveries, recovery_text
from caplab.experiments.base import TrialRecord
from caplab.spec import StudyConfig
from caplab.study.failover import database_series, failover_line, judged_failover, ledger_entry
from caplab.study.observer import StudyObserver
from caplab.study.recorder import CellRecorder
from caplab.study.sut import sut_environment


class TrialFailover:
    """What a trial's actions did, read into the replicate's ``summary``."""

    def __init__(
        self,
        config: StudyConfig,
        directory: Path,
        progress: StudyObserver,
        recorder: CellRecorder,
        summary: dict[str, Any],
    ) -> None:
        self.config = config
        self.directory = directory
        self.progress = progress
        self.recorder = recorder
        self.summary = summary

    def read(self, record: TrialRecord, outcomes: list[ActionOutcome], in_cell: int) -> None:
        """The trial's recovery, per-database series, ledger and verdict; ``in_cell`` is the
        trial's place across the cell's replicates."""
        if outcomes:
            self._recovered(record, outcomes, in_cell)
        series = self._databases(record)
        ledger = self._ledger(record, in_cell, series)
        if outcomes:
            self._judged(series, outcomes, ledger, in_cell + 1)

    def _databases(self, record: TrialRecord) -> dict[str, list[Interval]]:
        pg = self.config.target.postgres if self.config.target else None
        return database_series(record.result, pg.urls()[0]) if pg is not None else {}

    def _judged(
        self,
        series: dict[str, list[Interval]],
        outcomes: list[ActionOutcome],
        ledger: dict[str, Any] | None,
        trial: int,
    ) -> None:
        """The failover read database by database and, with a recovery SLO, judged (the cell's k/K)."""
        pg = self.config.target.postgres if self.config.target else None
        if pg is None:
            return
        entry = judged_failover(self.config.recovery, series, outcomes, ledger, trial)
        if entry is not None:
            self.progress.note(f"trial {trial}: {failover_line(entry)}")
            self.summary.setdefault("failover", []).append(entry)

    def _ledger(
        self, record: TrialRecord, index: int, series: dict[str, list[Interval]]
    ) -> dict[str, Any] | None:
        """With a ledger, what the trial acknowledged against what the database holds now: the
        acknowledged transactions a failover lost, measured (a commit whose acknowledgement the
        failure swallowed is held but not counted as acknowledged, so ``lost`` is a lower bound)."""
        pg = self.config.target.postgres if self.config.target else None
        if pg is None or not pg.ledger:
            return None
        directory = self.directory
        entry = ledger_entry(pg, directory / pg.passfile if pg.passfile else None, series, index)
        self.summary.setdefault("ledger", []).append(entry)
        self.progress.note(
            f"trial {index + 1}: ledger: {entry['acknowledged']:,} transactions acknowledged, "
            f"{entry['held']:,} held, {entry['lost']:,} lost"
        )
        return entry

    def actions(self) -> TrialActions | None:
        if not self.config.actions:
            return None
        declared = self.config.sut.actions if self.config.sut else {}
        return TrialActions(self.config.actions, declared, self.directory, sut_environment())

    def _recovered(self, record: TrialRecord, outcomes: list[ActionOutcome], index: int) -> None:
        """Each action's outcome as an event, and the load's recovery from it in the metrics."""
        for outcome, entry in zip(outcomes, recoveries(record.result, outcomes), strict=True):
            line = recovery_text(outcome, entry)
            self.progress.note(f"trial {index + 1}: {line}")
            self.recorder.event("action", line)
            self.summary.setdefault("recovery", []).append({"trial": index} | entry)
