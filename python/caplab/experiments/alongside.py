"""Plans run side by side and read as one: a usage profile whose actions go to targets of different
protocols (SMTP sends beside IMAP reads) is one engine plan per target, started together, each in
its own thread (the engine releases the GIL), merged as load agents' results are. The first plan's
intervals drive the callback (so collectors sample once per interval); the merged result counts
the profile's users once, as each plan ran the same users' share of the actions."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from caplab.cluster.merge import merge_results
from caplab.engine import IntervalSnapshot, Plan, RunResult

PlanRunner = Callable[[Plan, Callable[[IntervalSnapshot], bool | None]], RunResult]
"""Runs one plan with an interval callback, as `engine.run` does here; load agents on a cluster
(`caplab.cluster`) are another, passed in by the command line."""


def run_alongside(
    plan: Plan, on_interval: Callable[[IntervalSnapshot], bool | None], runner: PlanRunner
) -> RunResult:
    """Runs ``plan`` and its ``alongside`` plans together; a plan without any runs alone."""
    if not plan.alongside:
        return runner(plan, on_interval)
    results: list[RunResult | None] = [None] * len(plan.alongside)
    failures: list[BaseException] = []
    stop = threading.Event()

    def quiet(_: IntervalSnapshot) -> bool | None:
        return False if stop.is_set() else None

    def run_one(i: int, other: Plan) -> None:
        try:
            results[i] = runner(other, quiet)
        except BaseException as e:  # re-raised in the caller's thread below
            failures.append(e)

    threads = [
        threading.Thread(target=run_one, args=(i, p), daemon=True) for i, p in enumerate(plan.alongside)
    ]
    for t in threads:
        t.start()
    try:
        main = runner(plan, on_interval)
        if main.interrupted:  # stopped early (Ctrl-C, a callback): the others stop at their next interval
            stop.set()
    except BaseException:
        stop.set()
        raise
    finally:
        for t in threads:
            t.join()
    if failures:
        raise failures[0]
    done = [r for r in results if r is not None]
    merged = merge_results([("0", main), *((str(i), r) for i, r in enumerate(done, start=1))])
    return RunResult.from_json(json.dumps({**merged.raw, "users": main.users}))
