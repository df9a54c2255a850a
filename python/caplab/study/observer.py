"""What a running study tells whoever watches it (the terminal, in `caplab run`): the runner calls
these and never prints, so the study layer needs no terminal."""

from __future__ import annotations

from typing import Protocol

from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, Plan, RunResult
from caplab.json_types import JsonObject
from caplab.spec import Cell, Study
from caplab.store import CellRow


class StudyObserver(Protocol):
    def study_started(self, study_id: int, study: Study, rows: list[CellRow]) -> None: ...

    def note(self, text: str) -> None:
        """A line about the study as a whole (a baseline being measured)."""
        ...

    def cell_skipped(self, cell: Cell) -> None: ...

    def cell_started(self, cell: Cell) -> None: ...

    def replicate_started(self, cell: Cell, line: str) -> None:
        """A replicate of a begun cell starts (``line`` names the cell and the replicate): other
        cells' runs may have come in between, when the study's order is interleaved."""
        ...

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None: ...

    def trial_finished(self, kind: str, result: RunResult, samples: list[ResourceSample]) -> None:
        """A trial was stored: what it carried, for a line that stays (a log has no live view)."""
        ...

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None: ...

    def cell_finished(
        self,
        cell: Cell,
        status: str,
        metrics: JsonObject,
        resources: JsonObject,
        reason: str | None = None,
    ) -> None: ...


class Silent:
    """Watches nothing: for running a study from Python or a test."""

    def study_started(self, study_id: int, study: Study, rows: list[CellRow]) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def cell_skipped(self, cell: Cell) -> None:
        pass

    def cell_started(self, cell: Cell) -> None:
        pass

    def replicate_started(self, cell: Cell, line: str) -> None:
        pass

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None:
        pass

    def trial_finished(self, kind: str, result: RunResult, samples: list[ResourceSample]) -> None:
        pass

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None:
        pass

    def cell_finished(
        self,
        cell: Cell,
        status: str,
        metrics: JsonObject,
        resources: JsonObject,
        reason: str | None = None,
    ) -> None:
        pass


class Observers:
    """Several watchers of one study (the terminal and the live page): each told in turn."""

    def __init__(self, *watchers: StudyObserver) -> None:
        self.watchers = watchers

    def study_started(self, study_id: int, study: Study, rows: list[CellRow]) -> None:
        for w in self.watchers:
            w.study_started(study_id, study, rows)

    def note(self, text: str) -> None:
        for w in self.watchers:
            w.note(text)

    def cell_skipped(self, cell: Cell) -> None:
        for w in self.watchers:
            w.cell_skipped(cell)

    def cell_started(self, cell: Cell) -> None:
        for w in self.watchers:
            w.cell_started(cell)

    def replicate_started(self, cell: Cell, line: str) -> None:
        for w in self.watchers:
            w.replicate_started(cell, line)

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None:
        for w in self.watchers:
            w.trial_started(index, repeat, plan)

    def trial_finished(self, kind: str, result: RunResult, samples: list[ResourceSample]) -> None:
        for w in self.watchers:
            w.trial_finished(kind, result, samples)

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None:
        for w in self.watchers:
            w.interval(s, samples)

    def cell_finished(
        self,
        cell: Cell,
        status: str,
        metrics: JsonObject,
        resources: JsonObject,
        reason: str | None = None,
    ) -> None:
        for w in self.watchers:
            w.cell_finished(cell, status, metrics, resources, reason)
