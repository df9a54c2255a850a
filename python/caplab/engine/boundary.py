"""The compiled engine's calls: run a plan (the GIL released, interval snapshots to an
optional callback), merge and summarise histograms. Raises PlanError, TargetUnreachable and
WorkerFailed."""

from __future__ import annotations

import json
from collections.abc import Callable

from caplab import _engine
from caplab.engine.plan import Plan
from caplab.engine.result import IntervalSnapshot, LatencySummary, RunResult

ENGINE_VERSION: str = _engine.__version__
"""The compiled engine's version, recorded with every study's environment."""


def run(plan: Plan, on_interval: Callable[[IntervalSnapshot], bool | None] | None = None) -> RunResult:
    """Runs one trial. Raises PlanError (bad plan), TargetUnreachable (nothing listening, or a TLS
    server whose certificate fails verification: the message says why) or
    WorkerFailed (a generator thread failed, so the counts would be incomplete).

    ``on_interval`` sees every interval snapshot; returning False stops the run early (the result
    is kept, with ``interrupted`` set), as Ctrl-C does."""
    callback = None
    if on_interval is not None:
        sink = on_interval

        def callback(text: str) -> bool | None:
            return sink(IntervalSnapshot.from_dict(json.loads(text)))

    return RunResult.from_json(_engine.run_plan(plan.to_json(), callback))


def merge_histograms(encoded: list[str]) -> str:
    """Merges V2-encoded histograms (from threads, trials or machines) into one."""
    return _engine.merge_histograms(encoded)


def summarize_histogram(encoded: str) -> LatencySummary:
    return LatencySummary.from_dict(json.loads(_engine.summarize_histogram(encoded)))
