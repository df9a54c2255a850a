"""A failover study's recovery in words, one sentence per action, from ``Measured.failover``
(analysis/outage.py): what its Summary leads with in place of a capacity recommendation."""

from __future__ import annotations

from caplab import units as u
from caplab.report.model.types import ActionRecovery, FailoverSummary, IsolatedSides, PhaseSpread

PHASE_NAMES = {
    "detected": "detected",
    "elected": "elected",
    "promoted": "promoted",
    "writable": "writable",
    "first_commit": "first commit",
    "last_commit": "last database",
    "load_back": "load back",
}
"""Each phase of a failover's timeline (analysis/phases.py) as a reader calls it."""


def _spread(p50: float | None, p95: float | None, most: float | None) -> str:
    return f"p50 {_s(p50)}, p95 {_s(p95)}, max {_s(most)}"


def _s(seconds: float | None) -> str:
    return u.DASH if seconds is None else f"{seconds:.2f} s"


def _count(n: int, one: str, many: str) -> str:
    return f"{u.num(n)} {one if n == 1 else many}"


def action_sentence(a: ActionRecovery) -> str:
    """One action over its trials: recovery at group and database level with its resolution, the
    ledger, k/K and the throughput after against before."""
    sizes = ", ".join(u.num(n) for n in a["databases"])
    plural = "" if a["databases"] == [1] else "s"
    where = f"{_count(a['trials'], 'trial', 'trials')}, {sizes} database{plural}"
    parts = []
    if a["group_max_s"] is not None:
        parts.append(
            "a primary writable again after "
            + _spread(a["group_p50_s"], a["group_p95_s"], a["group_max_s"])
            + " (as the system reported it)"
        )
    if a["database_max_s"] is not None:
        parts.append(
            "each database's first commit after "
            + _spread(a["database_p50_s"], a["database_p95_s"], a["database_max_s"])
            + (f" (± {a['resolution_s']:.2g} s, the resolution)" if a["resolution_s"] else "")
        )
    if phases := phases_text(a):
        parts.append(phases)
    if a["not_recovered"]:
        missing = _count(a["not_recovered"], "database", "databases")
        parts.append(f"{missing} never back by the end of its trial")
    if a["lost"] is not None:
        parts.append(f"{u.num(a['lost'])} of {u.num(a['acknowledged'])} acknowledged transactions lost")
    else:
        parts.append("acknowledged transactions not checked (no ledger)")
    if isolated := a.get("isolated"):
        parts.append(isolated_text(isolated))
    if a["successes"] is not None:
        parts.append(f"{a['successes']}/{a['judged']} met the recovery SLO")
    if a["after_p50"] is not None:
        lowest = f" (lowest {u.pct(a['after_min'])})" if a["trials"] > 1 else ""
        parts.append(f"throughput after {u.pct(a['after_p50'])} of before{lowest}")
    parts.append(f"{_count(a['failed'], 'request', 'requests')} failed in the outages")
    return f"{a['action']} ({where}): " + "; ".join(parts) + "."


def isolated_text(i: IsolatedSides) -> str:
    """The isolated side of a partition: when it stopped taking writes, whether it took any while
    another node led (a split brain), and what it acknowledged and lost."""
    demoted = (
        f"demoted within {_s(i['demoted_max_s'])} of the cut"
        if i["demoted_max_s"] is not None
        else "not demoted in some trial"
    )
    return (
        f"the isolated side {demoted}, with {_count(i['split_brain_writes'], 'write', 'writes')} taken "
        f"while another node led and {_count(i['lost'], 'acknowledged write', 'acknowledged writes')} lost"
    )


def phases_text(a: ActionRecovery) -> str:
    """The HA manager's phases and the clients' after the fault (p50/p95/max over the trials),
    and the step that dominates; empty where the action reported no phases."""
    ends = a.get("phases") or []
    if not ends:
        return ""
    shown = ", ".join(
        f"{PHASE_NAMES.get(p['name'], p['name'])} {_s(p['p50_s'])} ({_s(p['max_s'])})" for p in ends
    )
    said = f"phases after the fault, p50 (max): {shown}"
    most = dominant_text(a.get("steps") or [])
    return f"{said}; {most}" if most else said


def dominant_step(steps: list[PhaseSpread]) -> PhaseSpread | None:
    """The step with the largest median share of the recovery: the one to tune first."""
    known = [s for s in steps if s["share"] is not None]
    return max(known, key=lambda s: s["share"] or 0.0) if known else None


def dominant_text(steps: list[PhaseSpread]) -> str:
    """``detection is 78 % of recovery: Patroni's ttl (…)``: the step to tune first."""
    top = dominant_step(steps)
    if top is None:
        return ""
    why = f": {top['set_by']}" if top["set_by"] else ""
    return f"{top['name']} is {u.pct(top['share'])} of the recovery to the first commit{why}"


def recovery_lead(summary: FailoverSummary) -> str:
    """What introduces the per-action sentences."""
    return (
        "This study measured failover, not capacity: per action over its trials, the time from the "
        "fault until the system took writes again and until each database committed again (nearest "
        "rank over every trial and database), what the ledger found lost, and the load after "
        "against before."
        if summary["actions"]
        else "This study measured failover, but no failover was read: see the cells below."
    )
