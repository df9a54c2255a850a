"""A failover's phases on one clock (analysis/phases.py): the HA manager's record as its action
printed it, put after the fault beside the clients' first commits; the steps between them, their
spread over trials, and the one that dominates the recovery."""

from __future__ import annotations

import pytest

from caplab.analysis.phases import (
    ManagerPhases,
    Timeline,
    dominant,
    ends,
    merged_set_by,
    steps,
    timeline,
)

FAULT_AT = 1_700_000_000.0
PRINTED = {
    "action": "kill-primary",
    "writable_after_s": 4.54,
    "phases": {
        "at": {
            "fault": FAULT_AT,
            "detected": FAULT_AT + 4.30,
            "elected": FAULT_AT + 4.37,
            "promoted": FAULT_AT + 4.52,
            "writable": FAULT_AT + 4.54,
        },
        "after_fault_s": {"detected": 4.3},
        "resolution_s": 0.02,
        "set_by": {"detected": "Patroni's ttl (5 s)"},
    },
}


def _manager(**shift: float) -> ManagerPhases:
    manager = ManagerPhases.from_report(PRINTED)
    assert manager is not None
    at = {k: (v + shift.get(k, 0.0) if v is not None else None) for k, v in manager.at.items()}
    return ManagerPhases(manager.fault_at, at, manager.resolution_s, manager.set_by)


def test_the_managers_phases_are_read_from_what_its_action_printed() -> None:
    manager = _manager()
    assert manager.after_fault() == pytest.approx(
        {"detected": 4.30, "elected": 4.37, "promoted": 4.52, "writable": 4.54}
    )
    assert manager.resolution_s == 0.02 and manager.set_by == {"detected": "Patroni's ttl (5 s)"}
    assert ManagerPhases.from_report({"writable_after_s": 1.0}) is None, "pgpair prints no phases"
    assert ManagerPhases.from_report({"phases": {"at": {"detected": 1.0}}}) is None, "no fault, no clock"


def test_a_timeline_puts_the_clients_first_commits_after_the_same_fault() -> None:
    t = timeline(_manager(), 2.3, [4.6, 4.5, 4.7], 4.8, 0.1)
    assert t.fault_s == 2.3 and t.writable_s == pytest.approx(4.54)
    assert (t.first_commit_s, t.last_commit_s, t.load_back_s) == (4.5, 4.7, 4.8)
    assert t.ordered() and t.agrees()
    assert t.recovery_s == 4.5
    lengths = dict(t.steps())
    assert list(lengths) == ["detection", "election", "promotion", "taking writes", "reconnect"]
    assert lengths["detection"] == pytest.approx(4.30) and lengths["election"] == pytest.approx(0.07)
    # the first commit's interval began 0.04 s before writable: within the resolution, a reconnect of 0
    assert lengths["reconnect"] == 0.0
    assert Timeline.from_dict(t.as_dict()) == t


def test_a_commit_well_before_writable_is_a_disagreement_not_a_recovery() -> None:
    early = timeline(_manager(), 2.3, [3.0], None, 0.1)
    assert early.agrees() is False
    assert timeline(_manager(), 2.3, [], None, 0.1).agrees() is None, "no database came back"


def test_phases_out_of_order_are_said_to_be() -> None:
    assert not timeline(_manager(promoted=1.0), 0.0, [4.6], None, 0.1).ordered()
    assert not Timeline(0.0, None, None, None, None, 1.0, 1.0, None, 0.02, 0.1).ordered()


def test_detection_dominates_a_recovery_that_waits_for_the_leader_key_to_expire() -> None:
    runs = [
        timeline(_manager(), 0.0, [4.6], 4.8, 0.1),
        timeline(_manager(detected=1.0, elected=1.0, promoted=1.0, writable=1.0), 0.0, [5.6], 5.8, 0.1),
    ]
    spread = steps(runs)
    top = dominant(spread)
    assert top is not None and top.name == "detection"
    assert top.share == pytest.approx(4.30 / 4.6) and top.set_by == "Patroni's ttl (5 s)"
    assert [top.p50_s, top.max_s] == pytest.approx([4.30, 5.30])
    by_name = {p.name: p for p in ends(runs)}
    assert list(by_name) == [
        "detected",
        "elected",
        "promoted",
        "writable",
        "first_commit",
        "last_commit",
        "load_back",
    ]
    assert [by_name["writable"].p50_s, by_name["writable"].max_s] == pytest.approx([4.54, 5.54])
    assert dominant([]) is None


def test_a_step_over_cells_of_different_settings_names_each_value_not_the_first() -> None:
    def run(ttl: int) -> Timeline:
        manager = _manager()
        said = {"detected": f"Patroni's ttl ({ttl} s; the leader renews its key every loop_wait, 2 s)"}
        return timeline(ManagerPhases(manager.fault_at, manager.at, 0.02, said), 0.0, [4.6], 4.8, 0.1)

    top = dominant(steps([run(10), run(20), run(20), run(30)]))
    assert top is not None and top.set_by == "Patroni's ttl (10 s, 20 s or 30 s by cell)"
    same = dominant(steps([run(10), run(10)]))
    assert (
        same is not None
        and same.set_by == "Patroni's ttl (10 s; the leader renews its key every loop_wait, 2 s)"
    )
    assert merged_set_by([None, None]) is None
    assert merged_set_by(["a (1)", "b (2)"]) == "a (1); b (2)", "different settings: both said whole"
