"""Observations written from the data, as a performance engineer would write them: the limit of
each configuration and its evidence, what the platform allows, how it scales, anomalies, what the
searches rejected and why, and what the generator cost. Each is one sentence or two, with the
figures that back it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import pairwise
from typing import Literal

from caplab import units as u
from caplab.analysis.limit import NEAR_SATURATION
from caplab.analysis.limit_kind import LimitKind
from caplab.report.model.runs import runs
from caplab.report.model.types import CellOutage, CellResult, Limit, Measured, Observation
from caplab.report.text.scaling import scaling_observations

GENERATOR_SHARE_WARN = 0.10
"""The generator using this share of the host's CPU competes with the SUT."""
MONOTONIC_NOISE = 0.05
"""Changes smaller than this fraction are noise when judging monotonicity."""
GROUP_AT = 3
"""This many cells with the same limit get one sentence instead of one each."""


def note(
    topic: str, text: str, cells: list[int] | None = None, severity: Literal["info", "warning"] = "info"
) -> Observation:
    return {"topic": topic, "severity": severity, "text": text, "cells": cells or []}


def _complete(results: Measured) -> list[CellResult]:
    return [c for c in results["cells"] if c["status"] == "complete"]


def _cores(results: Measured) -> float | None:
    cores = results["environment"].get("cores")
    return float(cores) if u.is_number(cores) and cores > 0 else None


def _figure(cell: CellResult) -> str:
    """What the cell sustained: its capacity when searched, else its measured throughput."""
    cap = cell["metrics"]["capacity"]
    if cap and cap["value"] is not None:
        return f"capacity {u.load(cap['value'], cap['unit'])}"
    return f"throughput {u.rate(cell['metrics']['throughput'])}"


def _signals(limit: Limit) -> list[str]:
    """The evidence worth quoting (not the "no hardware resource …" that the kind already says)."""
    return [s for s in limit["evidence"].get("signals", []) if not s.startswith("no hardware")]


def _limited(cells: list[CellResult]) -> list[tuple[CellResult, Limit]]:
    return [(c, c["limit"]) for c in cells if c["limit"]]


def _limit_sentence(cell: CellResult, limit: Limit) -> str:
    signals = _signals(limit)
    evidence = f" Evidence: {signals[0]}." if signals else ""
    kind = LimitKind.of(limit)
    if kind.is_hardware:
        bound = f"; it bounds throughput near {u.rate(limit['bound_rps'])}" if limit.get("bound_rps") else ""
        busy = f"{limit['resource']} at {u.pct(limit['utilization'])}"
        return f"{cell['label']}: {busy}{bound} ({_figure(cell)}).{evidence}"
    if kind == LimitKind.NETWORK_ROUND_TRIPS:
        trips = [s for s in signals if "round trips per message" in s]
        return (
            f"{cell['label']}: the network's round trips, not its bandwidth, at {_figure(cell)} "
            f"(no hardware resource near saturation; the busiest at {u.pct(limit.get('utilization'))})."
            + (f" Evidence: {trips[0]}." if trips else evidence)
        )
    if kind == LimitKind.SOFTWARE:
        busiest = limit.get("utilization")
        return (
            f"{cell['label']}: no hardware resource was near saturation at {_figure(cell)} (the "
            "busiest was at "
            f"{u.pct(busiest)}): the limit is in the software — pools, locks, serialisation or "
            f"round trips.{evidence}"
        )
    if kind == LimitKind.NOT_REACHED:
        demands = limit["evidence"].get("demands")
        bound = (
            f", would bound throughput near {u.rate(limit['bound_rps'])}" if limit.get("bound_rps") else ""
        )
        return (
            f"{cell['label']}: at {_figure(cell)} no limit was reached; the busiest resource, "
            f"{limit['resource']} "
            f"at {u.pct(limit['utilization'])} ({demands[0]['note'] if demands else ''}){bound}."
        )
    return f"{cell['label']}: limit {limit['summary']}."


def limit_observations(results: Measured) -> list[Observation]:
    """The limit of each cell; many cells with the same limit are summarised in one sentence."""
    cells = _limited(_complete(results))
    groups: dict[tuple[str, str], list[tuple[CellResult, Limit]]] = defaultdict(list)
    for c, limit in cells:
        groups[(limit["kind"], str(limit["resource"]))].append((c, limit))
    out = []
    for (_, resource), members in groups.items():
        if len(members) >= GROUP_AT and LimitKind.of(members[0][1]).is_hardware:
            utils = [v for _, m in members if u.is_number(v := m["utilization"])]
            bounds = [v for _, m in members if u.is_number(v := m["bound_rps"])]
            span = f" at {u.pct(min(utils))}–{u.pct(max(utils))} at capacity" if utils else ""
            bound = (
                f", bounding throughput between {u.rate(min(bounds))} and {u.rate(max(bounds))}"
                if bounds
                else ""
            )
            signals = [(c["label"], s) for c, m in members for s in _signals(m)]
            evidence = f" Evidence ({signals[0][0]}): {signals[0][1]}." if signals else ""
            out.append(
                note(
                    "limit",
                    f"In {len(members)} of {len(cells)} cells the limit is "
                    f"{resource}{span}{bound}.{evidence}",
                    [c["index"] for c, _ in members],
                )
            )
        else:
            out += [note("limit", _limit_sentence(c, m), [c["index"]]) for c, m in members]
    return out


def platform_observations(results: Measured) -> list[Observation]:
    """When the whole host's CPU is busy at capacity, say plainly that the machine is the ceiling."""
    cores = _cores(results)
    if cores is None:
        return []
    busy = [
        (c, v)
        for c in _complete(results)
        if u.is_number(v := c["resources"].get("host", {}).get("cpu_percent"))
    ]
    # The host's CPU this busy at capacity: the machine itself is the ceiling.
    saturated = [(c, v) for c, v in busy if v / (100.0 * cores) >= NEAR_SATURATION]
    if not saturated:
        return []
    host = results["environment"].get("hostname") or "the host"
    peak = max(v for _, v in saturated) / (100.0 * cores)
    # The factors that scale the system, the one with the longest runs first (hosts 1–4 before
    # stores 1 and 4): more of any of them shares the same cores.
    lengths: dict[str, int] = {}
    for r in runs(results):
        lengths[r.factor] = max(lengths.get(r.factor, 0), len(r.entries))
    growing = sorted(lengths, key=lambda name: -lengths[name])
    more = f"adding {' or '.join(growing)} cannot scale past ~{cores:g} cores of work" if growing else ""
    more = more or f"no configuration tested here can use more than {cores:g} cores"
    return [
        note(
            "platform",
            f"All tiers share {cores:g} cores: the SUT's roles and the load generator run on "
            f"{host}, whose CPU "
            f"was {u.pct(peak)} busy at capacity in {len(saturated)} of {len(busy)} cells; {more}.",
            [c["index"] for c, _ in saturated],
            "warning",
        )
    ]


def _monotonic(results: Measured) -> list[Observation]:
    out = []
    for run in runs(results, min_length=3):
        values = run.values()
        steps = [(b - a) / max(abs(a), abs(b), 1e-9) for a, b in pairwise(values)]
        ups = [s for s in steps if s > MONOTONIC_NOISE]
        downs = [s for s in steps if s < -MONOTONIC_NOISE]
        path = " → ".join(u.num(v) for v in values)
        levels = ", ".join(str(v) for v in run.levels())
        basis = run.entries[0]["basis"]
        if ups and downs:
            out.append(
                note(
                    "anomaly",
                    f"{basis.capitalize()} is not monotonic in {run.factor}{run.where}: {path}/s at "
                    f"{run.factor} = "
                    f"{levels}. A drop between larger configurations needs explaining (contention, a noisy "
                    "trial, a cell that ran under other load) before the trend is trusted.",
                    [e["cell"] for e in run.entries],
                    "warning",
                )
            )
        elif ups and len(steps) >= 2 and abs(steps[-1]) <= MONOTONIC_NOISE:
            last = run.levels()[-2]
            out.append(
                note(
                    "anomaly",
                    f"{basis.capitalize()} stops growing past {run.factor} = {last}{run.where}: {path}/s at "
                    f"{run.factor} = {levels}. Another resource saturates first (see the limits).",
                    [e["cell"] for e in run.entries],
                )
            )
    return out


def _cell_anomalies(cell: CellResult) -> list[Observation]:
    m, label, idx = cell["metrics"], cell["label"], [cell["index"]]
    out = []
    if m["consistency"] in ("fair", "poor"):
        out.append(
            note(
                "consistency",
                f"{label}: throughput consistency is {m['consistency']} (interval-to-interval variation "
                f"{u.pct(m['throughput_cv'])}); the Connexion paper's 'Fair': the rate fluctuates "
                "during the run.",
                idx,
                "warning" if m["consistency"] == "poor" else "info",
            )
        )
    ll = m.get("littles_law") or {}
    if ll.get("checked") and not ll.get("holds"):
        out.append(
            note(
                "anomaly",
                f"{label}: Little's law does not hold — {u.num(ll.get('in_flight'))} requests were "
                "in flight on "
                f"average where throughput × latency predicts {u.num(ll.get('expected'))}; the "
                "measurement is "
                "suspect (stalled connections, a clock problem or a too-short window).",
                idx,
                "warning",
            )
        )
    if m["steady"] is False:
        notes = "; ".join(m["steady_notes"][:2]) or "a trend through the window"
        out.append(note("anomaly", f"{label}: not in steady state — {notes}.", idx, "warning"))
    if u.is_number(m["error_ratio"]) and m["error_ratio"] > 0:
        out.append(
            note(
                "anomaly",
                f"{label}: {u.pct(m['error_ratio'])} of requests failed ({m['errors']}).",
                idx,
                "warning",
            )
        )
    if u.is_number(m["dropped"]) and m["dropped"] > 0:
        out.append(
            note(
                "anomaly",
                f"{label}: {m['dropped']} requests were not sent (the in-flight cap was reached): "
                "the SUT fell behind.",
                idx,
                "warning",
            )
        )
    return out


def _sides(outage: CellOutage) -> str:
    def side(rating: str | None, cv: float | None) -> str:
        return f"{rating} ({u.pct(cv)})" if rating else "not judged (too few intervals)"

    return (
        f"before the outage {side(outage['consistency_before'], outage['before_cv'])}, "
        f"after it {side(outage['consistency_after'], outage['after_cv'])}"
    )


def _outage_anomalies(outage: CellOutage) -> list[Observation]:
    """A failover configuration's anomalies: what failed or was not sent outside its outages, and
    its consistency on either side of them. What the outage itself cost is said once, as the
    outage (its steadiness, and Little's law, are not judged across a rate that fell to zero)."""
    label, idx, out = outage["label"], [outage["cell"]], []
    inside = [
        f"{u.num(n)} {what}"
        for n, what in (
            (outage["errors_inside"], "requests failed"),
            (outage["dropped_inside"], "were not sent (the in-flight cap reached while requests were held)"),
        )
        if n
    ]
    if inside:
        out.append(
            note(
                "outage",
                f"{label}: during the outages {' and '.join(inside)}: that is the outage being measured "
                "(see Recovery), not an anomaly.",
                idx,
            )
        )
    ratings = {outage["consistency_before"], outage["consistency_after"]}
    if ratings & {"fair", "poor"}:
        out.append(
            note(
                "consistency",
                f"{label}: throughput consistency, judged on each side of the outage rather than across "
                f"it (interval-to-interval variation): {_sides(outage)}.",
                idx,
                "warning" if "poor" in ratings else "info",
            )
        )
    sent = outage["sent"]
    if outage["errors_outside"]:
        share = f"{u.pct(outage['errors_outside'] / sent)} of requests" if sent else "requests"
        out.append(
            note(
                "anomaly",
                f"{label}: outside the outages {share} failed ({u.num(outage['errors_outside'])}).",
                idx,
                "warning",
            )
        )
    if outage["dropped_outside"]:
        out.append(
            note(
                "anomaly",
                f"{label}: outside the outages {u.num(outage['dropped_outside'])} requests were not sent "
                "(the in-flight cap was reached): the SUT fell behind.",
                idx,
                "warning",
            )
        )
    return out


def anomaly_observations(results: Measured) -> list[Observation]:
    out = _monotonic(results)
    failover = results.get("failover")
    outages = {o["cell"]: o for o in failover["cells"]} if failover else {}
    for c in _complete(results):
        outage = outages.get(c["index"])
        out += _outage_anomalies(outage) if outage else _cell_anomalies(c)
    return out


def search_observations(results: Measured) -> list[Observation]:
    """How many trials the searches ran and rejected, by reason; capacities not found."""
    searches = [(c, search) for c in results["cells"] if (search := c["search"])]
    if not searches:
        return []
    searched = [c for c, _ in searches]
    total = sum(search["count"] for _, search in searches)
    rejected = sum(search["rejected"] for _, search in searches)
    reasons: Counter[str] = Counter()
    for _, search in searches:
        reasons.update(search["reasons"])
    seconds = sum(cap["search_s"] or 0 for c in searched if (cap := c["metrics"]["capacity"]))
    why = ", ".join(f"{k} in {n}" for k, n in reasons.most_common())
    text = (
        f"The searches ran {total} trials in {u.minutes(seconds)} over {len(searched)} cells; "
        f"{rejected} were rejected" + (f" — {why} (a trial can fail on several counts)." if why else ".")
    )
    out = [note("search", text, [c["index"] for c in searched])]
    for c in searched:
        cap = c["metrics"]["capacity"]
        if cap and not cap["found"]:
            # Stopped by the generator: inconclusive about the system, not a capacity it lacks.
            what = "inconclusive" if cap["generator_saturated"] else "no capacity found"
            out.append(note("search", f"{c['label']}: {what} — {cap['message']}.", [c["index"]], "warning"))
        elif cap and cap["unstable"]:
            text = (
                f"{c['label']}: capacity {u.load(cap['value'], cap['unit'])}, unstable above it — the "
                f"confirmations above failed ({cap['unstable']}), so the search kept the load below that "
                "had passed."
            )
            out.append(note("search", text, [c["index"]], "warning"))
    return out


def generator_observations(results: Measured) -> list[Observation]:
    """What the load generator cost, and whether it competed with the SUT."""
    cells = [
        c for c in _complete(results) if u.is_number(c["resources"].get("generator", {}).get("cpu_percent"))
    ]
    if not cells:
        return []
    cpu = max(c["resources"]["generator"]["cpu_percent"] for c in cells)
    per_request = [
        c["metrics"]["generator_cpu_us_per_request"]
        for c in cells
        if u.is_number(c["metrics"]["generator_cpu_us_per_request"])
    ]
    cost = f" ({u.num(sum(per_request) / len(per_request))} µs of CPU per request)" if per_request else ""
    where = str(results["environment"].get("generator") or "on this host")
    cores = _cores(results)
    share = cpu / (100.0 * cores) if cores else None
    text = f"The load generator ({where}) used up to {u.percent(cpu)} of one core{cost}"
    text += f", {u.pct(share)} of the host's {cores:g} cores." if share is not None and cores else "."
    local = "this host" in where or "local" in where
    placements = {str(c.get("placement") or "") for c in cells}
    apart = all(p.startswith("generator on") for p in placements)
    if apart:  # the placement put it on CPUs of its own: it took none of the system's
        text = text.removesuffix(".") + f"; it ran apart from the system ({'; '.join(sorted(placements))})."
    if share is not None and share >= GENERATOR_SHARE_WARN and local and not apart:
        text += (
            " It competes with the SUT for the same CPU, so the capacities here are conservative; "
            "run the generator on another machine to measure the SUT alone."
        )
        return [note("generator", text, [c["index"] for c in cells], "warning")]
    saturated = [c for c in results["cells"] if c["metrics"]["generator_saturated"]]
    if saturated:
        labels = ", ".join(c["label"] for c in saturated)
        text += (
            f" It fell behind its schedule in {labels}: those figures describe the generator, not the SUT."
        )
        return [note("generator", text, [c["index"] for c in saturated], "warning")]
    return [note("generator", text + " It kept to its schedule throughout.", [c["index"] for c in cells])]


def cell_status_observations(results: Measured) -> list[Observation]:
    out = []
    for c in results["cells"]:
        if c["status"] == "failed":
            out.append(
                note(
                    "cells",
                    f"{c['label']} failed: {c['error'] or 'no reason recorded'}.",
                    [c["index"]],
                    "warning",
                )
            )
        elif c["status"] in ("pending", "running", "interrupted"):
            out.append(
                note(
                    "cells",
                    f"{c['label']} was not completed ({c['status']}): the study stopped before it; "
                    "`caplab run STUDY --resume` runs what is missing.",
                    [c["index"]],
                    "warning",
                )
            )
    return out


def observe(results: Measured) -> list[Observation]:
    """Every observation, in the order the report lists them."""
    return [
        *limit_observations(results),
        *platform_observations(results),
        *scaling_observations(results),
        *anomaly_observations(results),
        *search_observations(results),
        *generator_observations(results),
        *cell_status_observations(results),
    ]
