"""The methodology checklist's items about what the runs ran on and what their figures mean:
warm-up and steady state, the generator's validity, the environment recorded, units and cost
(``methodology`` grades how the runs were made, and collects all eight)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from caplab.analysis.methodology_types import (
    CellEvidence,
    Change,
    Check,
    Grade,
    Principle,
    StudyEvidence,
    TrialEvidence,
    cells_text,
    flow,
)
from caplab.analysis.steady import MIN_INTERVALS, measured

WARMUP_CHANGE = Change(
    "load: {warmup: 5s}",
    "the first seconds of a trial — connections opening, caches and pools cold — are then left out of "
    "its figures",
)


def whole_intervals(trial: TrialEvidence) -> int:
    """The intervals the steady-state check judged: whole ones after the warm-up, inside the window
    (``analysis.steady.measured``, the same rule)."""
    return len(measured(list(trial.intervals), trial.warmup_s + trial.duration_s))


def _interval_s(trials: list[TrialEvidence]) -> float:
    lengths = [t.intervals[0].end_s - t.intervals[0].start_s for t in trials if t.intervals]
    return max(lengths) if lengths else 1.0


def _longer_window(study: StudyEvidence, trials: list[TrialEvidence]) -> Change:
    seconds = max(10, math.ceil((MIN_INTERVALS + 1) * _interval_s(trials)))
    section = "search: {confirm: %ds}" if study.confirm_s is not None else "load: {duration: %ds}"
    return Change(
        section % seconds,
        f"a measured window of {seconds} s holds at least {MIN_INTERVALS} whole intervals, so a trend in "
        "throughput or latency (a growing queue, a cache filling) can be seen and the trial rejected",
    )


def _seconds(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:g} s" if low == high else f"{low:g}–{high:g} s"


def steady_state(study: StudyEvidence) -> Check:
    """Warm-up excluded and steady state checked: a cold start or a trend inside the window (a
    queue growing) makes the mean a figure of no particular load."""
    ran = [c for c in study.ran if c.trials]
    trials = [t for c in ran for t in c.trials]
    if study.job and not any(t.intervals for t in trials):
        reason = "a job is timed whole, phase by phase, from its start: there is no warm-up to leave out"
        return Check(Principle.STEADY_STATE, Grade.PASS, reason)
    if not trials:
        return Check(Principle.STEADY_STATE, Grade.WARN, "no measured trial to check")
    cold = [c for c in ran if any(t.warmup_s <= 0 for t in c.trials)]
    if cold:
        reason = (
            f"no warm-up in the measured trials of {len(cold)} of {len(ran)} cells ({cells_text(cold)}): "
            "their start (connections opening, caches and pools cold) is in the figures"
        )
        return Check(Principle.STEADY_STATE, Grade.FAIL, reason, WARMUP_CHANGE)
    unsteady = [c for c in ran if c.steady is False]
    if unsteady:
        notes = "; ".join(dict.fromkeys(n for c in unsteady for n in c.steady_notes))
        which = cells_text(unsteady)
        reason = f"{len(unsteady)} of {len(ran)} cells were not steady in their measured window ({which})"
        reason += f": {notes}" if notes else ""
        return Check(Principle.STEADY_STATE, Grade.WARN, reason, _longer_window(study, trials))
    fewest = min(whole_intervals(t) for t in trials)
    warmup = _seconds([t.warmup_s for t in trials])
    if fewest < MIN_INTERVALS:
        short = next(t for t in trials if whole_intervals(t) == fewest)
        reason = (
            f"steady state not checked: a measured trial holds {fewest} whole interval(s) after its "
            f"{short.warmup_s:g} s warm-up (a {short.duration_s:g} s window, {_interval_s([short]):g} s "
            f"intervals) and the trend check needs {MIN_INTERVALS}, so the cells count as steady untested; "
            f"the warm-up ({warmup}) was excluded"
        )
        return Check(Principle.STEADY_STATE, Grade.WARN, reason, _longer_window(study, trials))
    reason = (
        f"a warm-up of {warmup} excluded from every measured trial; no trend in throughput or latency "
        f"across {fewest} or more intervals, in each of the {len(ran)} cells"
    )
    return Check(Principle.STEADY_STATE, Grade.PASS, reason)


def _cores(environment: Mapping[str, object]) -> int | None:
    cores = environment.get("cores")
    return cores if isinstance(cores, int) and not isinstance(cores, bool) else None


def _apart(study: StudyEvidence) -> Change:
    cores = _cores(study.environment)
    if study.isolation == "shared" and cores is not None and cores >= 2:
        system = "1" if cores == 2 else f"1-{cores - 1}"
        return Change(
            f'isolation: {{generator: "0", system: "{system}"}}',
            "the generator then runs on CPU 0 and the system on the rest, so neither takes the other's "
            "time (leaving out `isolation:` does the same by default)",
        )
    return Change(
        None,
        "this host could not keep them apart (one CPU, or no cgroup cpuset controller): run the study on a "
        "host with two or more CPUs and a cpuset controller",
    )


def _cpus(cpus: str | None) -> str:
    """``CPU 0``, ``CPUs 1-3`` (the placement's own words)."""
    if cpus is None:
        return "every CPU"
    return f"CPUs {cpus}" if "," in cpus or "-" in cpus else f"CPU {cpus}"


def generator(study: StudyEvidence) -> Check:
    """The generator's validity: a trial whose generator fell behind its schedule measured the
    generator, and a generator sharing the system's CPUs takes from what the system is rated on."""
    ran = [c for c in study.ran if c.trials]
    behind = [c for c in ran if c.generator_saturated or any(t.generator_saturated for t in c.trials)]
    if behind:
        reason = (
            f"the generator fell behind its schedule in the measured trials of {len(behind)} of {len(ran)} "
            f"cells ({cells_text(behind)}): their figures are the generator's limit, not the system's"
        )
        change = Change(
            "load: {threads: 4}",
            "more engine threads send on time (or put the load on agents with `cluster:`); give the "
            "generator CPUs of its own with `isolation:` where it shares them",
        )
        return Check(Principle.GENERATOR, Grade.FAIL, reason, change)
    probes = sum(c.search_probes_saturated for c in ran)
    rejected = f"; {probes} search probe(s) where it did were rejected, as they must be" if probes else ""
    placed = [c for c in ran if c.placement is not None]
    shared = [c for c in placed if c.generator_cpus is None]
    if shared:
        example = shared[0].placement or ""
        reason = (
            f"no measured trial fell behind its schedule{rejected}; but the generator shared the system's "
            f"CPUs in {len(shared)} of {len(ran)} cells ({cells_text(shared)}): {example}"
        )
        return Check(Principle.GENERATOR, Grade.WARN, reason, _apart(study))
    if not placed:
        reason = (
            f"no measured trial fell behind its schedule{rejected}; where the generator ran was not recorded"
        )
        return Check(Principle.GENERATOR, Grade.WARN, reason)
    where = "; ".join(
        dict.fromkeys(
            f"generator on {_cpus(c.generator_cpus)}, system on {_cpus(c.system_cpus)}" for c in placed
        )
    )
    reason = f"no measured trial fell behind its schedule{rejected}; {where} in every cell"
    return Check(Principle.GENERATOR, Grade.PASS, reason)


ENVIRONMENT_PARTS: dict[str, tuple[str, ...]] = {
    "machine": ("cpu_model", "cores", "memory_gb"),
    "kernel": ("os",),
    "versions": ("caplab_version", "engine_version", "python"),
    "disks": ("disks",),
}
"""What the environment probe records, by what a reader needs to know."""


def _known(value: object) -> bool:
    return value not in (None, "", "unknown", [], {})


def _host_text(env: Mapping[str, object]) -> str:
    disks = env.get("disks")
    count = len(disks) if isinstance(disks, list) else 0
    return (
        f"{env.get('cpu_model')}, {env.get('cores')} cores, {env.get('memory_gb')} GB; {env.get('os')}; "
        f"caplab {env.get('caplab_version')}, engine {env.get('engine_version')}, "
        f"Python {env.get('python')}; "
        f"{count} disk(s)"
    )


def environment(study: StudyEvidence) -> Check:
    """The environment recorded: figures from an unnamed machine cannot be compared with anyone's."""
    env = study.environment
    if not env:
        reason = (
            "no environment recorded: nothing says which machine, kernel or versions the figures are from"
        )
        return Check(Principle.ENVIRONMENT, Grade.FAIL, reason)
    missing = [part for part, keys in ENVIRONMENT_PARTS.items() if not all(_known(env.get(k)) for k in keys)]
    ran = study.ran
    placed = sum(1 for c in ran if c.placement is not None)
    emulated = sum(1 for c in ran if c.emulated_hardware)
    extras = [f"placement in {placed} of {len(ran)} cells"]
    extras += [f"emulated hardware in {emulated} cells"] if emulated else []
    baseline = env.get("storage_baseline")
    measured_disks = isinstance(baseline, Mapping) and baseline.get("status") == "measured"
    extras += ["a storage baseline (fio)"] if measured_disks else []
    recorded = f"recorded: {_host_text(env)}; " + ", ".join(extras)
    if missing:
        reason = f"not recorded: {', '.join(missing)}; {recorded}"
        return Check(Principle.ENVIRONMENT, Grade.WARN, reason)
    on_volumes = [c for c in ran if c.volumes]
    if on_volumes and not measured_disks:
        reason = (
            f"{recorded}; but {len(on_volumes)} cells ran on volumes of this host's disks and no storage "
            "baseline measured those disks"
        )
        change = Change(
            "storage_baseline: {}",
            "fio measures the host's disks (8 KB random reads and writes) before the cells, so a "
            "storage-bound figure can be read against what the disks give",
        )
        return Check(Principle.ENVIRONMENT, Grade.WARN, reason, change)
    return Check(Principle.ENVIRONMENT, Grade.PASS, recorded)


def units(study: StudyEvidence) -> Check:
    """Units: a figure is only comparable when it says what was counted — a request, a user, an
    item — and over what time."""
    found = list(dict.fromkeys(f.unit for f in study.figures))
    if not found:
        return Check(Principle.UNITS, Grade.WARN, "no cell produced a figure to state a unit for")
    slo = f"; the SLO as written, each bound with its unit ({', '.join(study.slo)})" if study.slo else ""
    what = "capacities" if study.search_repeats is not None else "figures"
    stated = (
        f"{what} in {', '.join(found)}, latencies in ms from the intended send time, resources in "
        f"% of a CPU and MB/s{slo}"
    )
    if "users" in found and study.closed_model and study.think_s <= 0 and not study.usage_profile:
        reason = (
            f"{stated}; but a user here thinks for 0 s, sending again as soon as a reply comes: a "
            "connection in a loop, not a person, so the count of users says nothing of real ones"
        )
        change = Change(
            "load: {think: 5s}",
            "users then wait between requests as people do (or give a usage profile with `load.usage`)",
        )
        return Check(Principle.UNITS, Grade.WARN, reason, change)
    return Check(Principle.UNITS, Grade.PASS, stated)


def _price_example(study: StudyEvidence) -> str:
    if study.profiles:
        return f"cost: {{profiles: {{{flow(study.profiles[0])}: 1000}}}}"
    for name, value in study.factors.items():
        if isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= 24):
            return f"cost: {{configurations: [{{when: {{{flow(name)}: {flow(value)}}}, price: 1000}}]}}"
    return "cost: {configurations: [{price: 1000}]}"


def cost(study: StudyEvidence) -> Check:
    """Cost: a capacity plan chooses what to buy, and a capacity without a price cannot rank the
    options by what a unit of it costs."""
    change = Change(
        _price_example(study),
        "your price for each configuration (a purchase, or `basis: hour`); the report then gives each "
        "one's cost per unit of capacity and the cheapest that meets the goal",
    )
    if not study.cost:
        reason = (
            "no prices (the study has no `cost:`): the report rates capacity, not what a unit of it costs"
        )
        return Check(Principle.COST, Grade.WARN, reason, change)
    complete = [c for c in study.ran if c.status == "complete"]
    unpriced: list[CellEvidence] = [c for c in complete if c.priced is False]
    if unpriced:
        reason = f"{len(unpriced)} of {len(complete)} configurations have no price ({cells_text(unpriced)})"
        return Check(Principle.COST, Grade.WARN, reason, change)
    currency = study.currency or "USD"
    reason = f"every configuration priced ({currency}): each one's cost per unit of capacity is given"
    return Check(Principle.COST, Grade.PASS, reason)
