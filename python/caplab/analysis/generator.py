"""Judging the generator: when a late generator says something about the system, and when it
says only something about itself."""

from __future__ import annotations

from caplab.engine import GeneratorFigures

CROWDED_HOST_CPU = 90.0
"""Host CPU (% of all cores) at which a late generator is taken to be crowded out by the SUT."""
OWN_LIMIT_THREAD = 0.9
"""A generator thread this busy is at its own limit, whatever else the machine does."""


def crowded_out(generator: GeneratorFigures, resources: dict[str, dict[str, float]]) -> str | None:
    """Why a late generator says something about the system rather than about itself, or None.

    On one machine, a system under test that takes every core also takes them from the generator,
    whose sends then leave late. That is a measurement — this load is more than the machine
    carries — so the trial fails like any other over capacity. A generator late with cores to
    spare, or with a thread of its own at its limit, is not: that still stops the search."""
    host = (resources.get("host") or {}).get("cpu_util_percent")
    if host is None or host < CROWDED_HOST_CPU or generator.busiest_thread >= OWN_LIMIT_THREAD:
        return None
    late = generator.lateness_p99_ms
    return (
        f"machine saturated: host CPU at {host:.0f}% of all cores, so the generator's sends ran "
        f"{late or 0:.0f} ms late at p99 (its own busiest thread at {generator.busiest_thread:.0%})"
    )
