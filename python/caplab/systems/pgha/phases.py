"""The recovery timeline of a failover as the HA manager records it, on the client's clock
(``time.time()``):

- **detected**: the old leader's key is gone from etcd (its lease expired: nobody renewed it; in a
  switchover, the old leader released it once its PostgreSQL had stopped);
- **elected**: the key names another node (it won the race for it);
- **promoted**: the new timeline's history file was written (PostgreSQL ended recovery), the
  time Patroni's ``/history`` gives for it;
- **writable**: the new leader's Patroni reports its PostgreSQL out of recovery (``/primary``
  answers 200 as soon as the key is held, before the promotion: its body's role says more).

etcd keeps no times, so a ``LeaderWatch`` started before the fault polls the leader key; its
resolution is its poll interval, given with the result. Beside each phase, what sets its length in
Patroni's own settings (``set_by``), so that a report can say which one to tune.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from caplab.systems.pgha.etcd import Etcd
from caplab.systems.pgha.patroni import Node
from caplab.systems.pgha.settings import HaError

WATCH_INTERVAL_S = 0.02


@dataclass(frozen=True)
class Phases:
    """When each phase ended (epoch seconds), and the fault they are measured from."""

    fault_at: float
    detected_at: float
    elected_at: float
    promoted_at: float
    writable_at: float
    resolution_s: float = WATCH_INTERVAL_S
    set_by: SetBy = ()

    def as_dict(self) -> dict[str, Any]:
        at = {
            "fault": self.fault_at,
            "detected": self.detected_at,
            "elected": self.elected_at,
            "promoted": self.promoted_at,
            "writable": self.writable_at,
        }
        return {
            "at": at,
            "after_fault_s": {k: round(v - self.fault_at, 3) for k, v in at.items() if k != "fault"},
            "resolution_s": self.resolution_s,
            "set_by": dict(self.set_by),
        }


SetBy = tuple[tuple[str, str], ...]
"""(phase, what sets how long it takes), in Patroni's words and this cluster's settings."""

_PROMOTED_WRITABLE = (
    ("promoted", "PostgreSQL's promotion (end of recovery, a new timeline)"),
    ("writable", "the new leader's Patroni seeing its PostgreSQL out of recovery"),
)


def set_by(ttl: int, loop_wait: int) -> SetBy:
    """What sets each phase's length under Patroni with these settings, when the leader died."""
    return (
        ("detected", f"Patroni's ttl ({ttl} s; the leader renews its key every loop_wait, {loop_wait} s)"),
        ("elected", f"Patroni's loop_wait ({loop_wait} s): a replica's next HA loop takes the key"),
        *_PROMOTED_WRITABLE,
    )


SWITCHOVER_SET_BY: SetBy = (
    (
        "detected",
        "the old leader stepping down: Patroni stops its PostgreSQL (a shutdown checkpoint of "
        "every database) and releases the leader key",
    ),
    ("elected", "the candidate's Patroni taking the released key"),
    *_PROMOTED_WRITABLE,
)
"""What sets each phase's length in a switchover: nothing expires; the leader steps down."""


class LeaderWatch:
    """Polls the leader key from a thread: when it stopped naming ``old`` and when it first
    named someone else."""

    def __init__(self, etcd: Etcd, scope: str, old: str) -> None:
        self.etcd = etcd
        self.key = f"/service/{scope}/leader"
        self.old = old
        self.detected_at: float | None = None
        self.elected_at: float | None = None
        self.new_leader: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgha-leader-watch", daemon=True)

    def __enter__(self) -> LeaderWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.is_set() and self.elected_at is None:
            try:
                holder = self.etcd.get(self.key)
            except HaError:
                holder = self.old  # etcd busy: no news
            now = time.time()
            if holder != self.old and self.detected_at is None:
                self.detected_at = now
            if holder not in (None, self.old):
                self.new_leader = holder
                self.elected_at = now
            self._done.wait(WATCH_INTERVAL_S)

    def wait_elected(self, timeout_s: float) -> str:
        """The new leader's name, once the key names one."""
        self._thread.join(timeout_s)
        if self.new_leader is None:
            raise HaError(f"no new leader took the key within {timeout_s:.0f} s of the fault")
        return self.new_leader


def wait_writable(node: Node, timeout_s: float) -> float:
    """When ``node``'s Patroni first said it holds the leader key and runs a primary."""
    deadline = time.monotonic() + timeout_s
    while not node.writable():
        if time.monotonic() > deadline:
            raise HaError(f"{node.name} was not a writable primary within {timeout_s:.0f} s")
        time.sleep(WATCH_INTERVAL_S)
    return time.time()


def promotion_time(node: Node, old_timeline: int, timeout_s: float) -> tuple[float, int]:
    """From the new leader's ``/history``: when the timeline after ``old_timeline`` began, and
    that timeline. The leader records it in its next HA loop, so this waits for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = node.rest("/history")
        entries = answer.body if answer.status == 200 and isinstance(answer.body, list) else []
        for entry in entries:
            # [timeline ended, LSN, reason, timestamp, new leader]
            if len(entry) >= 4 and entry[0] >= old_timeline and entry[3]:
                return datetime.fromisoformat(entry[3]).timestamp(), int(entry[0]) + 1
        if time.monotonic() > deadline:
            raise HaError(f"{node.name}'s /history shows no timeline after {old_timeline}: {entries}")
        time.sleep(WATCH_INTERVAL_S * 5)


def taken_over(
    watch: LeaderWatch,
    new: Node,
    fault_at: float,
    old_timeline: int,
    bound_s: float,
    explained: SetBy,
) -> tuple[Phases, int]:
    """Once ``watch`` saw ``new`` elected: waits until it takes writes and its promotion is on
    record, and returns the failover's phases from ``fault_at`` (each explained by ``explained``:
    ``set_by`` for a dead leader, ``SWITCHOVER_SET_BY`` for one that stepped down) and the new
    timeline."""
    writable_at = wait_writable(new, bound_s)
    promoted_at, new_timeline = promotion_time(new, old_timeline, bound_s)
    assert watch.detected_at is not None and watch.elected_at is not None
    found = Phases(
        fault_at,
        watch.detected_at,
        watch.elected_at,
        promoted_at,
        writable_at,
        set_by=explained,
    )
    return found, new_timeline
