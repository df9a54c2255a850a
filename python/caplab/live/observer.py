"""Feeding the live page from the run's own stream: a study's observer (beside the terminal's
progress, on the same events) and the calls `caplab load` makes for its one trial."""

from __future__ import annotations

from typing import Any

from caplab.collect.base import ResourceSample
from caplab.engine import IntervalSnapshot, Plan, RunResult
from caplab.json_types import JsonObject, member, number, text
from caplab.live.server import LiveServer
from caplab.live.state import Event, LiveState, result_figures
from caplab.spec import Cell, Study
from caplab.store import CellRow
from caplab.units import factors_text


class LiveObserver:
    """A `StudyObserver` that shows the study on the live page."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server

    def study_started(self, study_id: int, study: Study, rows: list[CellRow]) -> None:
        cells = [(factors_text(c.factors), "pending" if r.status != "complete" else "skipped")
                 for c, r in zip(study.cells, rows, strict=True)]  # fmt: skip
        self.server.apply(lambda s: s.begin("study", f"study {study_id}: {study.name}", cells))

    def note(self, text: str) -> None:
        self.server.apply(lambda s: s.note(text))

    def cell_skipped(self, cell: Cell) -> None:
        self.server.apply(lambda s: s.cell_finished(cell.index, "skipped", {}))

    def cell_started(self, cell: Cell) -> None:
        self.server.apply(lambda s: s.cell_started(cell.index))

    def replicate_started(self, cell: Cell, line: str) -> None:
        """The page follows the cell this replicate belongs to (another cell's may have run last)."""
        self.server.apply(lambda s: [*s.note(line), *s.cell_started(cell.index)])

    def trial_started(self, index: int, repeat: int, plan: Plan) -> None:
        label = f"trial {index + 1} of {repeat} at {plan.load_words()}"
        self.server.apply(lambda s: s.trial_started(label))

    def trial_finished(self, kind: str, result: RunResult, samples: list[ResourceSample]) -> None:
        self.server.apply(lambda s: s.trial_finished(kind, result))

    def interval(self, s: IntervalSnapshot, samples: list[ResourceSample]) -> None:
        self.server.apply(lambda state: state.interval(s, samples))

    def cell_finished(
        self,
        cell: Cell,
        status: str,
        metrics: JsonObject,
        resources: JsonObject,
        reason: str | None = None,
    ) -> None:
        figures = cell_figures(metrics) | ({"reason": reason} if reason else {})
        self.server.apply(lambda s: s.cell_finished(cell.index, status, figures))


def cell_figures(metrics: JsonObject) -> dict[str, Any]:
    """What the matrix shows of a finished cell: throughput, p99 and errors, and a search's
    capacity (or its message when none was found)."""
    figures: dict[str, Any] = {
        "throughput": number(metrics, "throughput"),
        "p99": number(member(metrics, "latency_ms"), "p99"),
        "errors": number(metrics, "errors"),
    }
    capacity = member(metrics, "capacity")
    if capacity:
        users = number(capacity, "capacity_users")
        figures["capacity"] = {
            "found": bool(capacity.get("found")),
            "load": users if users is not None else number(capacity, "capacity_rps"),
            "unit": "users" if users is not None else "req/s",
            "message": text(capacity, "message"),
        }
    return figures


def load_started(server: LiveServer, url: str, plan: Plan) -> None:
    """`caplab load`: a matrix of one cell, running its one trial."""
    label = f"{url} at {plan.load_words()}"

    def start(s: LiveState) -> list[Event]:
        opened = s.begin("load", f"caplab load {url}", [(label, "pending")])
        return [*opened, *s.cell_started(0), *s.trial_started(f"load at {plan.load_words()}")]

    server.apply(start)


def load_finished(server: LiveServer, result: RunResult) -> None:
    """The load's end: its cell complete (or interrupted) with the run's own figures."""
    figures = result_figures(result)
    status = "interrupted" if result.interrupted else "complete"

    def finish(s: LiveState) -> list[Event]:
        return [*s.cell_finished(0, status, figures), *s.finish(status, figures)]

    server.apply(finish)
