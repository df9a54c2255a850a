"""A failover's recovery timeline in phases, on one clock: what the HA manager recorded (the fault,
the failure **detected**, a new leader **elected**, the promotion finished, the new primary
**writable**) beside what caplab's own per-database series saw (the clients' **first commit**, the
last database's, the load **back** to its throughput before the fault).

The manager's times come from the failover action itself, as epoch seconds (``time.time()`` in the
action's process: pgha's ``kill-primary`` prints them). caplab puts them on the trial's clock by the
action's start, taken on both clocks at one instant (``time.monotonic()`` for the load's clock,
``time.time()`` for the epoch): a phase at epoch ``t`` is ``started_s + (t - started_at)`` on the
load's clock. The two clocks of one host drift apart by parts per million over a trial (NTP slews
at most 500 ppm: 5 ms in 10 s), far below the series' resolution; a step of the wall clock during a
trial would show as phases out of order, which the reading reports rather than hides.

The fault is then the action's own record of it (the SIGKILL), not the action's start: the command
spends a fraction of a second starting Python and finding the leader before it kills, and every
time after the fault — the manager's and the clients' — is measured from the same instant.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from caplab.analysis.failover import percentile

MANAGER_PHASES = ("detected", "elected", "promoted", "writable")
"""The manager's phases in the order they happen, each the end of one step of the failover."""

STEPS = (
    ("detection", None, "detected"),
    ("election", "detected", "elected"),
    ("promotion", "elected", "promoted"),
    ("taking writes", "promoted", "writable"),
    ("reconnect", "writable", "first_commit"),
)
"""A recovery's steps to the clients' first commit: (name, from the end of, to the end of); None:
from the fault. The reconnect is the clients' own: the new primary took writes, they had yet to find
it."""

AGREE_S = 0.2
"""How far the manager's ``writable`` may come after the clients' first commit (both clocks' and
both readings' resolution together) before the two are said to disagree."""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ManagerPhases:
    """The HA manager's record of one failover as its action printed it: each phase's end in epoch
    seconds (None where it did not say), the watch's resolution, and per phase what sets its
    length in the manager's words (``"detected": "Patroni's ttl (5 s) …"``)."""

    fault_at: float
    at: dict[str, float | None]
    resolution_s: float
    set_by: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_report(cls, reported: Mapping[str, Any]) -> ManagerPhases | None:
        """From the ``phases`` of an action's last JSON object (``{"at": {"fault": …, "detected":
        …}, "resolution_s": …, "set_by": {…}}``); None when it printed none or no fault time."""
        phases = reported.get("phases")
        at = phases.get("at") if isinstance(phases, Mapping) else None
        if not isinstance(phases, Mapping) or not isinstance(at, Mapping):
            return None
        fault = _number(at.get("fault"))
        if fault is None:
            return None
        set_by = phases.get("set_by")
        return cls(
            fault,
            {name: _number(at.get(name)) for name in MANAGER_PHASES},
            _number(phases.get("resolution_s")) or 0.0,
            {str(k): str(v) for k, v in set_by.items()} if isinstance(set_by, Mapping) else {},
        )

    def after_fault(self) -> dict[str, float | None]:
        """Each phase in seconds after the fault."""
        return {name: None if t is None else t - self.fault_at for name, t in self.at.items()}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Timeline:
    """One failover's phases on the trial's clock: the fault (seconds from the load's start) and
    every phase in seconds after it; None where it was not seen (the manager said nothing, no
    database came back, the load never settled)."""

    fault_s: float
    detected_s: float | None
    elected_s: float | None
    promoted_s: float | None
    writable_s: float | None
    first_commit_s: float | None
    """The clients' first commit after the outage, on any database: the group back for them."""
    last_commit_s: float | None
    """The last database's first commit (the availability-group paper's database level)."""
    load_back_s: float | None
    """The load's throughput back to its level before the fault (analysis/recovery.py)."""
    resolution_s: float
    """The manager's phases' resolution (its watch's poll interval)."""
    series_resolution_s: float
    """The clients' phases' resolution (the interval series' width)."""
    set_by: dict[str, str] = field(default_factory=dict)

    def at(self, name: str) -> float | None:
        """A phase's end by name (``fault`` is 0), in seconds after the fault."""
        if name == "fault":
            return 0.0
        value = getattr(self, f"{name}_s", None)
        return _number(value)

    def steps(self) -> list[tuple[str, float]]:
        """Each step to the clients' first commit with its length (a step whose ends were not both
        seen is left out; one whose end was seen before its start, within the readings'
        resolution, counts 0)."""
        out = []
        for name, start, end in STEPS:
            begun = 0.0 if start is None else self.at(start)
            ended = self.at(end)
            if begun is not None and ended is not None:
                out.append((name, max(0.0, ended - begun)))
        return out

    @property
    def recovery_s(self) -> float | None:
        """What the steps add up to: the clients' first commit, else the manager's writable."""
        return self.first_commit_s if self.first_commit_s is not None else self.writable_s

    def ordered(self) -> bool:
        """fault ≤ detected ≤ promoted ≤ writable (elected may trail promoted by the watch's
        resolution: both are read by polling), each seen."""
        ends = [self.detected_s, self.promoted_s, self.writable_s]
        if any(e is None for e in ends):
            return False
        seen = [0.0, *(e for e in ends if e is not None)]
        return all(a <= b for a, b in itertools.pairwise(seen))

    def agrees(self, slack_s: float = AGREE_S) -> bool | None:
        """Whether the clients' first commit came no earlier than the manager's writable, within
        ``slack_s``: a client cannot commit on a primary that does not take writes yet, so a commit
        before it means the two readings are not on one clock. None when either is missing."""
        if self.writable_s is None or self.first_commit_s is None:
            return None
        return self.writable_s <= self.first_commit_s + slack_s

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Timeline:
        set_by = raw.get("set_by")
        return cls(
            fault_s=_number(raw.get("fault_s")) or 0.0,
            detected_s=_number(raw.get("detected_s")),
            elected_s=_number(raw.get("elected_s")),
            promoted_s=_number(raw.get("promoted_s")),
            writable_s=_number(raw.get("writable_s")),
            first_commit_s=_number(raw.get("first_commit_s")),
            last_commit_s=_number(raw.get("last_commit_s")),
            load_back_s=_number(raw.get("load_back_s")),
            resolution_s=_number(raw.get("resolution_s")) or 0.0,
            series_resolution_s=_number(raw.get("series_resolution_s")) or 0.0,
            set_by={str(k): str(v) for k, v in set_by.items()} if isinstance(set_by, Mapping) else {},
        )


def timeline(
    manager: ManagerPhases,
    fault_s: float,
    database_s: Sequence[float],
    load_back_s: float | None,
    series_resolution_s: float,
) -> Timeline:
    """The manager's phases after its fault (on the load's clock at ``fault_s``) and the clients':
    each database's first commit after the fault (``database_s``, those that came back) and the
    load back."""
    after = manager.after_fault()
    return Timeline(
        fault_s=fault_s,
        detected_s=after["detected"],
        elected_s=after["elected"],
        promoted_s=after["promoted"],
        writable_s=after["writable"],
        first_commit_s=min(database_s) if database_s else None,
        last_commit_s=max(database_s) if database_s else None,
        load_back_s=load_back_s,
        resolution_s=manager.resolution_s,
        series_resolution_s=series_resolution_s,
        set_by=manager.set_by,
    )


ENDS = (*MANAGER_PHASES, "first_commit", "last_commit", "load_back")
"""Every phase a timeline may have seen, in the order they happen."""


@dataclass(frozen=True)
class PhaseSpread:
    """One phase (its end after the fault) or one step (its length) over the failovers of an
    action: nearest-rank p50/p95 and max; for a step, its median share of the recovery (the
    steps to the clients' first commit) and what sets its length."""

    name: str
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    share: float | None = None
    set_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SET_BY_STEP = {
    "detection": "detected",
    "election": "elected",
    "promotion": "promoted",
    "taking writes": "writable",
}
"""The manager's phase whose ``set_by`` explains a step."""


def ends(timelines: Sequence[Timeline]) -> list[PhaseSpread]:
    """Each phase's end after the fault over ``timelines`` (those seen at least once)."""
    out = []
    for name in ENDS:
        seen = [v for t in timelines if (v := t.at(name)) is not None]
        if seen:
            out.append(PhaseSpread(name, percentile(seen, 0.5), percentile(seen, 0.95), max(seen)))
    return out


def steps(timelines: Sequence[Timeline]) -> list[PhaseSpread]:
    """Each step's length over ``timelines`` (in the steps' order, those seen at least once)."""
    out = []
    for name, _, _ in STEPS:
        lengths: list[float] = []
        shares: list[float] = []
        said: list[str | None] = []
        for t in timelines:
            length = dict(t.steps()).get(name)
            if length is None:
                continue
            lengths.append(length)
            total = t.recovery_s
            if total:
                shares.append(length / total)
            said.append(t.set_by.get(SET_BY_STEP.get(name, "")))
        if lengths:
            out.append(
                PhaseSpread(
                    name,
                    percentile(lengths, 0.5),
                    percentile(lengths, 0.95),
                    max(lengths),
                    percentile(shares, 0.5),
                    merged_set_by(said),
                )
            )
    return out


def merged_set_by(said: Sequence[str | None]) -> str | None:
    """What sets a step over trials whose settings may differ: the one text where all agree, else
    the setting's name with each trial's value (``Patroni's ttl (10 s, 20 s or 30 s by cell)``),
    so a study over the setting never quotes its first cell's value for all of them."""
    texts = list(dict.fromkeys(s for s in said if s))
    if len(texts) <= 1:
        return texts[0] if texts else None
    names = {t.split(" (", 1)[0] for t in texts}
    values = [m.group(1) for t in texts if (m := re.search(r"\(([^;)]*)", t))]
    if len(names) > 1 or len(values) < len(texts):
        return "; ".join(texts)
    shown = ", ".join(values[:-1]) + f" or {values[-1]}"
    return f"{names.pop()} ({shown} by cell)"


def dominant(spread: Sequence[PhaseSpread]) -> PhaseSpread | None:
    """The step that takes the largest share of the recovery (at the median): the one to tune."""
    known = [s for s in spread if s.share is not None]
    return max(known, key=lambda s: s.share or 0.0) if known else None
