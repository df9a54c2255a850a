"""A failover study's measurements gathered for its summary: per action, the recovery at group and
database level over every trial (nearest-rank p50/p95/max, good to ± the series' resolution), the
acknowledged transactions lost, k of K successes and the throughput after against before; per
configuration, its requests split at the outages — what failed or was not sent inside one is the
outage being measured, not an anomaly — and its consistency judged before and after the outage,
never across it (a rate that drops to zero and comes back is not a fluctuation).

A study is a failover study when it searched no capacity, ran no job and read failovers: there is
then no capacity to recommend, and its outages are what it measured."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from caplab.analysis.failover import IsolatedSide, percentile
from caplab.analysis.phases import PhaseSpread, Timeline, ends, steps
from caplab.analysis.steady import MIN_INTERVALS, Rating, rate


def is_failover_study(searched: Iterable[bool], failovers: int, job: bool) -> bool:
    """No cell searched, no job, and at least one failover read (``failovers``: trials read)."""
    return failovers > 0 and not job and not any(searched)


@dataclass(frozen=True)
class TrialRecovery:
    """One failover trial as measured: times in seconds from the fault."""

    action: str
    databases: int
    group_s: float | None
    """Fault → a primary writable, as the system reported it."""
    database_s: Sequence[float]
    """Each database's fault → first commit (those that came back)."""
    not_recovered: int
    resolution_s: float | None
    acknowledged: int | None
    lost: int | None
    success: bool | None
    """Against the recovery SLO; None where the study gives none."""
    after_ratio: float | None
    """The load's throughput after recovery against before the fault."""
    failed: int
    """Requests (transactions) that failed in the outage."""
    timeline: Timeline | None = None
    """The HA manager's phases beside the clients' (analysis/phases.py), where it reported them."""
    isolated: IsolatedSide | None = None
    """After a partition: what the isolated side acknowledged, lost and when it was demoted."""


@dataclass(frozen=True)
class ActionRecovery:
    """One action over every trial that ran it."""

    action: str
    trials: int
    databases: list[int]
    """The database counts it ran at, smallest first."""
    group_p50_s: float | None
    group_p95_s: float | None
    group_max_s: float | None
    database_p50_s: float | None
    database_p95_s: float | None
    database_max_s: float | None
    """Over every database of every trial (nearest rank: values measured, never interpolated)."""
    not_recovered: int
    resolution_s: float | None
    acknowledged: int | None
    lost: int | None
    """Summed over the trials with a ledger; None where no trial had one."""
    successes: int | None
    judged: int
    """k of K: trials judged against the recovery SLO (0 without one, ``successes`` then None)."""
    after_p50: float | None
    after_min: float | None
    """Throughput after against before, over the trials (median and the lowest)."""
    failed: int
    phases: list[PhaseSpread] = field(default_factory=list)
    """Each phase's end after the fault over the trials that reported the manager's phases."""
    steps: list[PhaseSpread] = field(default_factory=list)
    """Each step's length and share of the recovery over those trials."""
    isolated: IsolatedOver | None = None
    """Over the trials that partitioned a node (None: none did)."""


@dataclass(frozen=True)
class IsolatedOver:
    """The isolated sides of an action's partitions: writes taken while another node led and
    acknowledged writes lost, summed, and the latest demotion after the cut (None: one never was)."""

    trials: int
    split_brain_writes: int
    lost: int
    demoted_max_s: float | None

    @classmethod
    def over(cls, sides: Sequence[IsolatedSide]) -> IsolatedOver | None:
        if not sides:
            return None
        demoted = [s.demoted_after_s for s in sides]
        return cls(
            len(sides),
            sum(s.split_brain_writes for s in sides),
            sum(s.lost for s in sides),
            None if None in demoted else max(d for d in demoted if d is not None),
        )


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def summarise_actions(trials: Sequence[TrialRecovery]) -> list[ActionRecovery]:
    """Each action (in the order first met) over its trials."""
    out = []
    for action in dict.fromkeys(t.action for t in trials):
        mine = [t for t in trials if t.action == action]
        group = [t.group_s for t in mine if t.group_s is not None]
        each = [s for t in mine for s in t.database_s]
        ratios = [t.after_ratio for t in mine if t.after_ratio is not None]
        judged = [t.success for t in mine if t.success is not None]
        widths = [t.resolution_s for t in mine if t.resolution_s]
        out.append(
            ActionRecovery(
                action=action,
                trials=len(mine),
                databases=sorted({t.databases for t in mine}),
                group_p50_s=percentile(group, 0.5),
                group_p95_s=percentile(group, 0.95),
                group_max_s=max(group) if group else None,
                database_p50_s=percentile(each, 0.5),
                database_p95_s=percentile(each, 0.95),
                database_max_s=max(each) if each else None,
                not_recovered=sum(t.not_recovered for t in mine),
                resolution_s=max(widths) if widths else None,
                acknowledged=_total(t.acknowledged for t in mine),
                lost=_total(t.lost for t in mine),
                successes=sum(judged) if judged else None,
                judged=len(judged),
                after_p50=percentile(ratios, 0.5),
                after_min=min(ratios) if ratios else None,
                failed=sum(t.failed for t in mine),
                phases=ends(timelines := [t.timeline for t in mine if t.timeline is not None]),
                steps=steps(timelines),
                isolated=IsolatedOver.over([t.isolated for t in mine if t.isolated is not None]),
            )
        )
    return out


@dataclass(frozen=True)
class Slot:
    """One interval of a trial's series (seconds since the trial started)."""

    start_s: float
    end_s: float
    completed: int
    errors: int
    dropped: int
    warmup: bool = False


@dataclass(frozen=True)
class Outage:
    """A fault and when everything was back: the load settled and every database committed
    again (``end_s`` None: not back by the end of the trial)."""

    start_s: float
    end_s: float | None


def outage_end(fault_s: float, *recovered_after_s: float | None) -> float | None:
    """The outage ends with the last of its recoveries (seconds from the fault); any missing one
    (never back) leaves it open to the end of the trial."""
    if not recovered_after_s or any(r is None for r in recovered_after_s):
        return None
    return fault_s + max(r for r in recovered_after_s if r is not None)


def _inside(slot: Slot, outages: Sequence[Outage]) -> bool:
    """An interval that overlaps an outage belongs to it (its errors may be the outage's first)."""
    return any(slot.end_s > o.start_s and (o.end_s is None or slot.start_s < o.end_s) for o in outages)


@dataclass(frozen=True)
class OutageSplit:
    """A trial's (or a cell's) failed and unsent requests, inside its outages and outside them."""

    sent: int
    errors_inside: int
    errors_outside: int
    dropped_inside: int
    dropped_outside: int

    def __add__(self, other: OutageSplit) -> OutageSplit:
        return OutageSplit(
            self.sent + other.sent,
            self.errors_inside + other.errors_inside,
            self.errors_outside + other.errors_outside,
            self.dropped_inside + other.dropped_inside,
            self.dropped_outside + other.dropped_outside,
        )


NO_REQUESTS = OutageSplit(0, 0, 0, 0, 0)


def split_at_outages(slots: Sequence[Slot], outages: Sequence[Outage]) -> OutageSplit:
    """The measured intervals' (warm-up excluded) errors and unsent requests, by whether they fell
    in an outage."""
    measured = [s for s in slots if not s.warmup]
    inside = [s for s in measured if _inside(s, outages)]
    outside = [s for s in measured if not _inside(s, outages)]
    return OutageSplit(
        sum(s.completed + s.errors for s in measured),
        sum(s.errors for s in inside),
        sum(s.errors for s in outside),
        sum(s.dropped for s in inside),
        sum(s.dropped for s in outside),
    )


def _cv(slots: Sequence[Slot]) -> float | None:
    rates = [s.completed / (s.end_s - s.start_s) for s in slots if s.end_s > s.start_s]
    if len(rates) < MIN_INTERVALS:
        return None
    mean = statistics.fmean(rates)
    return statistics.stdev(rates) / mean if mean > 0 else None


@dataclass(frozen=True)
class Around:
    """Interval-to-interval variation of throughput before the first outage and after the last
    (None: too few intervals on that side to judge)."""

    before_cv: float | None
    after_cv: float | None

    @property
    def before(self) -> Rating | None:
        return rate(self.before_cv) if self.before_cv is not None else None

    @property
    def after(self) -> Rating | None:
        return rate(self.after_cv) if self.after_cv is not None else None


def around_outages(
    slots: Sequence[Slot], outages: Sequence[Outage], ceiling_rps: float | None = None
) -> Around:
    """Consistency on each side of the outages, the warm-up left out; after it, the burst of held
    requests completing once it ends (throughput above ``ceiling_rps``) is skipped as the outage's
    tail, as the recovery's own reading does."""
    measured = sorted((s for s in slots if not s.warmup and s.end_s > s.start_s), key=lambda s: s.start_s)
    if not outages:
        return Around(_cv(measured), None)
    first = min(o.start_s for o in outages)
    ends = [o.end_s for o in outages]
    before = [s for s in measured if s.end_s <= first]
    if any(e is None for e in ends):
        return Around(_cv(before), None)
    last = max(e for e in ends if e is not None)
    after = [s for s in measured if s.start_s >= last]
    if ceiling_rps is not None:
        # A rate that never comes down to the ceiling is the load's own (the rate before the fault
        # was still climbing): nothing is skipped then.
        rates = [s.completed / (s.end_s - s.start_s) for s in after]
        burst = next((k for k, r in enumerate(rates) if r <= ceiling_rps), 0)
        after = after[burst:]
    return Around(_cv(before), _cv(after))


def pooled(arounds: Sequence[Around]) -> Around:
    """A configuration's trials together: the mean variation on each side over the trials that
    could be judged there."""

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.fmean(known) if known else None

    return Around(mean([a.before_cv for a in arounds]), mean([a.after_cv for a in arounds]))
