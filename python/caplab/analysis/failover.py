"""A failover of many databases, read from what their clients saw: for each database, the time from
the fault to its first committed transaction after the outage; across them the median, the 95th
percentile and the slowest (the availability-group paper's "DB level" time), and the databases
that never came back; beside it the group-level time the system itself reports (fault → a primary
accepts writes again). A trial is a success when every database recovered within the recovery SLO
and nothing acknowledged was lost where the replication mode promises nothing is; a repeated
failover is reported as k successes of K with each failure's reason.

The series are per database on the load's interval clock, so every time here is good to ± one
interval: studies of recovery use short intervals (100 ms).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from caplab.analysis.recovery import Interval


@dataclass(frozen=True)
class DatabaseRecovery:
    """One database through one fault; times in seconds from the fault."""

    database: str
    disrupted: bool
    """Whether any of its transactions failed after the fault."""
    recovery_s: float | None
    """Fault → the start of the interval of its first commit after the outage (0 when nothing
    failed; None when none came before the trial ended)."""
    failed: int
    """Its transactions that failed from the fault until it recovered (until the end if never)."""


def database_recovery(
    database: str, intervals: Sequence[Interval], fault_s: float, leader_gone_s: float | None = None
) -> DatabaseRecovery:
    """When ``database`` committed again after a fault at ``fault_s``.

    The outage begins with the first interval after the fault that has a failed transaction; it is
    over at the first interval from there with a commit and no failure, or with a commit after an
    interval that had failures and no commit at all (the commit then came after the failures). A
    database that saw no request after the fault never showed it recovered.

    ``leader_gone_s``, when the HA manager said when the old leader was gone (its key expired or
    released, on the same clock): a commit in an interval that ended by then was the old leader's,
    not the recovery. A switchover's old leader serves on while it checkpoints before it stops,
    and a commit slowed past its timeout there is a failure, but not yet the outage."""
    after = sorted((i for i in intervals if i.end_s > fault_s), key=lambda i: i.start_s)
    first_bad = next((k for k, i in enumerate(after) if i.errors > 0), None)
    if first_bad is None:
        if any(i.completed > 0 for i in after):
            return DatabaseRecovery(database, False, 0.0, 0)
        return DatabaseRecovery(database, False, None, 0)
    dead = False
    failed = 0
    for i in after[first_bad:]:
        old_leader = leader_gone_s is not None and i.end_s <= leader_gone_s
        if i.completed > 0 and (i.errors == 0 or dead) and not old_leader:
            return DatabaseRecovery(database, True, max(0.0, i.start_s - fault_s), failed + i.errors)
        failed += i.errors
        dead = dead or (i.completed == 0 and i.errors > 0)
    return DatabaseRecovery(database, True, None, failed)


@dataclass(frozen=True)
class GroupRecovery:
    """Every database of one trial through one fault, and the system's own group-level time."""

    fault_s: float
    databases: list[DatabaseRecovery]
    group_s: float | None
    """Fault → a primary accepts writes again, as the action reported it (None: not reported)."""
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    """Over the databases that recovered (the unrecovered are named in ``not_recovered``)."""
    not_recovered: list[str]
    failed: int
    resolution_s: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile ``q`` (0–1): a value that was measured, never interpolated."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def group_recovery(
    series: Mapping[str, Sequence[Interval]],
    fault_s: float,
    group_s: float | None = None,
    leader_gone_s: float | None = None,
) -> GroupRecovery:
    """Each database's recovery from a fault at ``fault_s`` (none counted before ``leader_gone_s``,
    where the manager said when the old leader was gone) and their spread (module docstring)."""
    each = [database_recovery(name, intervals, fault_s, leader_gone_s) for name, intervals in series.items()]
    times = [d.recovery_s for d in each if d.recovery_s is not None]
    widths = [i.end_s - i.start_s for s in series.values() for i in s if i.end_s > i.start_s]
    gaps = [_request_gap(s) for s in series.values()]
    return GroupRecovery(
        fault_s,
        each,
        group_s,
        percentile(times, 0.5),
        percentile(times, 0.95),
        max(times) if times else None,
        [d.database for d in each if d.recovery_s is None],
        sum(d.failed for d in each),
        max(widths + gaps, default=0.0),
    )


def _request_gap(intervals: Sequence[Interval]) -> float:
    """The mean time between one database's requests. Its first commit after a recovery comes up to
    that late, so a database probed more slowly than the series' interval (1.25 a second at 400
    databases) is known to its gap, not to the interval."""
    sent = sum(i.completed + i.errors for i in intervals)
    if not sent:
        return 0.0
    gap = (max(i.end_s for i in intervals) - min(i.start_s for i in intervals)) / sent
    # an estimate from counts (one request fewer at the trial's edges reads 0.1008 s for 0.1 s):
    # to two significant digits, as it is shown
    return float(f"{gap:.2g}")


@dataclass(frozen=True)
class Verdict:
    """Whether one trial's failover met the recovery SLO; ``reasons`` says why not."""

    success: bool
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class IsolatedSide:
    """What a partition's isolated side did, as the action reported it (pgha's ``isolate``): the
    writes it acknowledged and lost, those it acknowledged while another node led (a split brain),
    and when it was demoted."""

    lost: int
    split_brain_writes: int
    demoted_after_s: float | None

    @classmethod
    def from_reported(cls, reported: dict[str, float]) -> IsolatedSide | None:
        if "isolated_lost" not in reported or "split_brain_writes" not in reported:
            return None
        return cls(
            int(reported["isolated_lost"]),
            int(reported["split_brain_writes"]),
            reported.get("isolated_demoted_after_s"),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    recovery: GroupRecovery | None,
    within_s: float,
    lost: int | None,
    lossless: bool,
    action_ok: bool = True,
    isolated: IsolatedSide | None = None,
) -> Verdict:
    """A trial's failover: every database back within ``within_s`` of the fault, and — when the
    replication mode promises no loss (``lossless``) — no acknowledged transaction lost. After a
    partition, also: no write taken on the isolated side while another node led, and none it
    acknowledged lost where the mode promises none."""
    reasons = []
    if not action_ok:
        reasons.append("the failover action itself failed")
    if recovery is None:
        reasons.append("no per-database series to read recovery from")
    else:
        if recovery.not_recovered:
            names = ", ".join(recovery.not_recovered[:5]) + (" …" if len(recovery.not_recovered) > 5 else "")
            reasons.append(
                f"{len(recovery.not_recovered)} database(s) not back by the end of the trial: {names}"
            )
        late = [d for d in recovery.databases if d.recovery_s is not None and d.recovery_s > within_s]
        if late:
            slowest = max(late, key=lambda d: d.recovery_s or 0.0)
            reasons.append(
                f"{len(late)} database(s) recovered after the {within_s:g} s SLO "
                f"(slowest {slowest.database}: {slowest.recovery_s:.1f} s)"
            )
    if lossless and lost:
        reasons.append(f"{lost:,} acknowledged transaction(s) lost where the mode promises none")
    if isolated is not None and isolated.split_brain_writes:
        reasons.append(
            f"split brain: {isolated.split_brain_writes:,} write(s) acknowledged on the isolated side "
            "while another node led"
        )
    if isolated is not None and lossless and isolated.lost:
        reasons.append(
            f"{isolated.lost:,} write(s) acknowledged on the isolated side lost where the mode promises none"
        )
    return Verdict(not reasons, reasons)


@dataclass(frozen=True)
class SuccessRate:
    """k of K repeated failovers met the recovery SLO; each failure with its reasons."""

    successes: int
    trials: int
    failures: list[dict[str, Any]]
    """``{"trial": label, "reasons": [...]}`` per failed trial."""

    @property
    def text(self) -> str:
        return f"{self.successes}/{self.trials}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"text": self.text}


def success_rate(verdicts: Sequence[tuple[str, Verdict]]) -> SuccessRate:
    """``(trial label, verdict)`` pairs → k/K with the failures' reasons."""
    failures = [{"trial": label, "reasons": v.reasons} for label, v in verdicts if not v.success]
    return SuccessRate(sum(v.success for _, v in verdicts), len(verdicts), failures)


def reported_seconds(reported: dict[str, Any], name: str = "writable_after_s") -> float | None:
    """A time an action reported about itself (pgpair's RoleChange: ``writable_after_s``)."""
    value = reported.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
