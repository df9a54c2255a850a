"""The report's sections in the papers' order: summary with the recommendation, the study's findings
judged, environment, scenario and workload, test matrix, results, capacity, scaling, trials over
time, observations, recommendations, the searches' trials as an appendix, and last the methodology
checklist (how far the study can be trusted and repeated)."""

from __future__ import annotations

from collections import Counter

from caplab import units as u
from caplab.report.layout.blocks import (
    Block,
    Bullets,
    ChartBlock,
    Explorer,
    ExplorerEntry,
    Figure,
    KeyFigures,
    Para,
    Report,
    Section,
    kv_table,
)
from caplab.report.layout.charts import Chart
from caplab.report.layout.failover import (
    database_recovery_table,
    phases_table,
    recovery_fit_lines,
    replication_table,
    steps_table,
    success_table,
)
from caplab.report.layout.findings import findings_section
from caplab.report.layout.job_charts import job_chart
from caplab.report.layout.methodology import methodology_section
from caplab.report.layout.paper import paper_recovery_table, paper_table
from caplab.report.layout.phase_chart import phases_chart
from caplab.report.layout.study_charts import summary_charts
from caplab.report.layout.tables import (
    capacity_table,
    consolidation_table,
    environment_table,
    events_table,
    fit_tables,
    job_fit_lines,
    job_table,
    matrix_table,
    paper_tables,
    ratings_table,
    recovery_table,
    results_table,
    search_table,
    storage_table,
    volumes_table,
)
from caplab.report.layout.timeline import timeline_charts
from caplab.report.layout.usage import actions_table, cpu_per_user_table, per_user_table
from caplab.report.model.scenario import goal_text
from caplab.report.model.types import FailoverSummary, Observation, Results, Scenario
from caplab.report.text.recommend import rated, sustained
from caplab.report.text.recovery import action_sentence, dominant_step, recovery_lead

TOPICS = {
    "limit": "Limit",
    "platform": "Platform",
    "scaling": "Scaling",
    "anomaly": "Anomaly",
    "consistency": "Consistency",
    "search": "Search",
    "generator": "Generator",
    "cells": "Cells",
    "outage": "Outage",
}
SUMMARY_OBSERVATIONS = 6


def _observation(o: Observation) -> Para:
    return Para(
        o["text"],
        lead=TOPICS.get(o["topic"], o["topic"].capitalize()) + ".",
        tone=o["severity"] if o["severity"] == "warning" else "",
    )


def _key_figures(results: Results) -> KeyFigures:
    rec = results["recommendation"]
    items = []
    ratings = rec["ratings"]
    if ratings:
        best = max(ratings, key=lambda r: r["rated"])
        items.append(Figure(f"best {best['basis']}", sustained(best), best["label"]))
        choices = rec.get("choices") or []
        if len(choices) == 1:
            items.append(Figure("recommended", choices[0]["label"], f"rated {rated(choices[0])}"))
        elif choices:
            per = ", ".join(goal["for_each"] if (goal := results["goal"]) else [])
            items.append(Figure("recommended", f"{len(choices)} configurations", f"one for each {per}"))
        else:
            items.append(Figure("rated for", rated(best), f"{u.pct(rec['headroom'])} headroom kept"))
    limits = Counter(
        "not reached" if c["limit"]["kind"] == "not reached" else str(c["limit"]["resource"])
        for c in results["cells"]
        if c["status"] == "complete" and c["limit"]
    )
    if limits:
        resource, count = limits.most_common(1)[0]
        items.append(Figure("limit", resource, f"in {count} of {sum(limits.values())} cells"))
    fits = [(e, fit) for e in results["scaling"] if (fit := e.get("fit"))]
    unfitted = [(e, peak) for e in results["scaling"] if e.get("candidate") and (peak := e.get("peak"))]
    if fits:
        entry, fit = fits[0]
        items.append(Figure(f"scaling over {entry['factor']}", fit["model"], f"R² {u.num(fit['r2'])}"))
    elif unfitted:
        entry, peak = unfitted[0]
        where = f"{entry['factor']} = {peak['n']:g}"
        items.append(
            Figure(
                f"scaling over {entry['factor']}",
                "no model fits",
                f"peak {u.rate(peak['throughput'])} at {where}",
            )
        )
    findings = results.get("findings") or []
    if findings:
        held = sum(1 for f in findings if f["verdict"] == "reproduced")
        rest = Counter(f["verdict"] for f in findings if f["verdict"] != "reproduced")
        note = ", ".join(f"{n} {v}" for v, n in sorted(rest.items())) or "none contradicted or open"
        items.append(Figure("findings reproduced", f"{held} of {len(findings)}", note))
    by_status = results["matrix"]["by_status"]
    done = by_status.get("complete", 0)
    others = ", ".join(f"{n} {s}" for s, n in by_status.items() if s != "complete")
    items.append(Figure("cells complete", f"{done} of {results['matrix']['cells']}", others or "none failed"))
    goal = results["goal"]
    items.append(
        Figure("goal", goal_text(goal), f"with {u.pct(goal['headroom'])} headroom")
        if goal
        else Figure("goal", "none given", "rated with 25% headroom")
    )
    return KeyFigures(items)


def _failover_figures(results: Results, summary: FailoverSummary) -> KeyFigures:
    items = []
    for a in summary["actions"]:
        if a["database_max_s"] is not None:
            last = f"{a['database_max_s']:.2f} s"
            items.append(Figure(f"{a['action']}: last database back", last, "max over trials"))
        if (top := dominant_step(a.get("steps") or [])) is not None:
            share = u.pct(top["share"])
            items.append(Figure(f"{a['action']}: {top['name']}", share, "of the recovery, its largest step"))
    ledgers = [a for a in summary["actions"] if a["lost"] is not None]
    if ledgers:
        lost = sum(a["lost"] or 0 for a in ledgers)
        acknowledged = sum(a["acknowledged"] or 0 for a in ledgers)
        of = f"of {u.num(acknowledged)} acknowledged, by the ledger"
        items.append(Figure("acknowledged lost", u.num(lost), of))
    judged = [a for a in summary["actions"] if a["successes"] is not None]
    if judged:
        k, n = sum(a["successes"] or 0 for a in judged), sum(a["judged"] for a in judged)
        items.append(Figure("failovers succeeded", f"{k}/{n}", "within the recovery SLO"))
    by_status = results["matrix"]["by_status"]
    others = ", ".join(f"{n} {s}" for s, n in by_status.items() if s != "complete")
    done = by_status.get("complete", 0)
    items.append(Figure("cells complete", f"{done} of {results['matrix']['cells']}", others or "none failed"))
    return KeyFigures(items)


def _failover_summary(results: Results, summary: FailoverSummary) -> Section:
    """A failover study's Summary: the recovery it measured, per action, first; no capacity
    recommendation (nothing was searched); the warnings after (not the limits of a load that was
    never pushed to one)."""
    warnings = [o for o in results["observations"] if o["severity"] == "warning"]
    blocks: list[Block | Section] = [
        Para(recovery_lead(summary), lead="Recovery.", tone="callout"),
        Bullets([Para(action_sentence(a)) for a in summary["actions"]]),
        _failover_figures(results, summary),
    ]
    if warnings:
        blocks.append(Bullets([_observation(o) for o in warnings[:SUMMARY_OBSERVATIONS]]))
    return Section("Summary", "summary", blocks)


def summary(results: Results) -> Section:
    if failover := results.get("failover"):
        return _failover_summary(results, failover)
    rec = results["recommendation"]
    observations = results["observations"]
    limits = [o for o in observations if o["topic"] == "limit"][:2]
    chosen = limits + [o for o in observations if o["severity"] == "warning" and o not in limits]
    blocks: list[Block | Section] = [
        Para(rec["text"], lead="Recommendation.", tone="callout"),
        _key_figures(results),
        Bullets([_observation(o) for o in chosen[:SUMMARY_OBSERVATIONS]]),
    ]
    return Section("Summary", "summary", blocks)


def environment(results: Results) -> Section:
    blocks: list[Block | Section] = [environment_table(results)]
    baseline = results["environment"].get("storage_baseline")
    storage = Section("Storage baseline", "storage", level=3)
    if isinstance(baseline, dict) and baseline.get("status") == "measured":
        table = storage_table(baseline)
        storage.blocks.append(
            Para(
                "Measured before the cells with fio: 8 KB random reads and writes, as the BizTalk "
                "tests did with SQLIO."
            )
        )
        if table is not None:
            storage.blocks.append(table)
        if baseline.get("note"):
            storage.blocks.append(Para(u.free_text(baseline["note"])))
    elif isinstance(baseline, dict):
        storage.blocks.append(
            Para(f"Not measured: {u.free_text(baseline.get('note') or baseline.get('status'))}.")
        )
    else:
        storage.blocks.append(
            Para("Not measured (add a storage baseline to the study to measure the disks with fio).")
        )
    blocks.append(storage)
    return Section("Environment", "environment", blocks)


def _load_text(s: Scenario) -> str:
    if s["model"] == "closed":
        think = f", thinking {u.num(s['think_s'])} s between requests" if s.get("think_s") else ""
        if s.get("usage"):
            think = f", each doing {s['usage']} (Poisson, think time from the rates)"
        users = "the number of users the search varies" if s.get("search") else f"{s.get('users')} users"
        return f"closed: {users}{think}"
    arrivals = f"open: {s.get('schedule', 'constant')} arrivals"
    if s.get("search"):
        return f"{arrivals}; the rate is what the search varies"
    return f"{arrivals} at {s['rate']}/s" if s.get("rate") is not None else arrivals


def scenario(results: Results) -> Section:
    s = results["scenario"]
    target = s.get("target") or {}
    rows = [
        ("Target", " ".join(str(x) for x in (target.get("method"), target.get("url")) if x) or u.DASH),
        (
            "Protocol",
            str(target.get("protocol") or u.DASH)
            + (f", {target['framing']} framing" if target.get("framing") else ""),
        ),
        ("Payload", u.free_text(target.get("body")) if target.get("body") else "none"),
        ("Load model", _load_text(s)),
        (
            "Trial",
            f"{u.num(s['duration_s'])} s measured after {u.num(s['warmup_s'])} s of warm-up, "
            f"repeated {s['repeat']}×",
        ),
        ("SLO", ", ".join(s["slo"]) or "none"),
    ]
    search = s.get("search")
    if search:
        rows.append(
            (
                "Capacity search",
                f"double the load until the SLO fails, bisect to {u.pct(search['precision'])} with "
                f"{u.num(search['trial_s'])} s trials, then confirm with {search['repeats']} trial(s) of "
                f"{u.num(search['confirm_s'])} s; a trial must also be steady and keep up with the "
                "offered load",
            )
        )
    rows += [
        (
            "System under test",
            f"started per cell: {u.free_text(s['sut_start'])}" if s.get("sut_start") else "already running",
        ),
        ("Roles measured", ", ".join(s["roles"]) or "none named (the limit cannot be attributed)"),
        (
            "Application counters",
            "read from the system's metrics endpoint" if s.get("app_metrics") else "none",
        ),
    ]
    blocks: list[Block | Section] = []
    if s.get("description"):
        blocks.append(Para(u.free_text(s["description"])))
    blocks.append(kv_table(rows, "Scenario and workload"))
    return Section("Scenario and workload", "scenario", blocks)


def matrix(results: Results) -> Section:
    m = results["matrix"]
    naming = m.get("naming") or list(m["factors"])

    def values(name: str) -> str:
        return ", ".join(u.cell_label({"": v}).removeprefix("=") for v in m["factors"][name])

    factors = "; ".join(f"{k} ∈ {{{values(k)}}}" for k in naming)
    together = [k for k in m["factors"] if k not in naming]
    if together:
        factors += f" (with {', '.join(together)} moving together with it)"
    states = ", ".join(f"{n} {s}" for s, n in m["by_status"].items())
    text = f"{m['cells']} cells ({states})" + (
        f" from the factors {factors}." if factors else ": one configuration."
    )
    blocks: list[Block | Section] = [Para(text), matrix_table(results)]
    hardware = [
        (
            f"#{c['index']} {c['label']}".strip(),
            "; ".join(f"{role}: {', '.join(lines)}" for role, lines in hw.items()),
        )
        for c in results["cells"]
        if (hw := c.get("hardware"))
    ]
    if hardware:
        blocks.append(kv_table(hardware, "Hardware each cell's roles ran on (emulated on this host)"))
    placed = [
        (f"#{c['index']} {c['label']}".strip(), p) for c in results["cells"] if (p := c.get("placement"))
    ]
    if placed:
        blocks.append(kv_table(placed, "Where the generator and the system ran on this host"))
    return Section("Test matrix", "matrix", blocks)


def _chart(charts: dict[str, Chart], key: str) -> list[ChartBlock]:
    return [ChartBlock(charts[key])] if key in charts else []


def job_section(results: Results) -> Section | None:
    table = job_table(results)
    if table is None:
        return None
    return Section(
        "Batch job",
        "job",
        [
            table,
            *paper_tables(results),
            *([ChartBlock(chart)] if (chart := job_chart(results)) else []),
            *(Para(line) for line in job_fit_lines(results)),
        ],
    )


def consolidation_section(results: Results) -> Section | None:
    table = consolidation_table(results)
    return Section("Consolidation", "consolidation", [table]) if table is not None else None


def recovery_section(results: Results) -> Section | None:
    tables = (
        success_table(results),
        database_recovery_table(results),
        paper_recovery_table(results),
        phases_table(results),
        steps_table(results),
    )
    by_database: list[Block | Section] = [t for t in tables if t is not None]
    if (chart := phases_chart(results)) is not None:
        by_database.append(ChartBlock(chart))
    blocks: list[Block | Section] = [*by_database, *(Para(line) for line in recovery_fit_lines(results))]
    if (table := recovery_table(results)) is not None:
        blocks.append(table)
    if blocks and (replication := replication_table(results)) is not None:
        blocks.append(replication)
    return Section("Recovery", "recovery", blocks) if blocks else None


def results_section(results: Results, charts: dict[str, Chart]) -> Section:
    blocks: list[Block | Section] = [results_table(results)]
    if volumes := volumes_table(results):
        blocks.append(volumes)
    if per_user := cpu_per_user_table(results):
        blocks.append(per_user)
    failover = any(c["failover"] or c["recovery"] for c in results["cells"])
    if not failover and (replication := replication_table(results)) is not None:
        blocks.append(replication)  # a mirrored pair under load alone (a failover study's is in Recovery)
    for key in ("knee", "latency", "resources"):
        blocks += _chart(charts, key)
    return Section("Results", "results", blocks)


def capacity(results: Results, charts: dict[str, Chart]) -> Section:
    if not results["capacity"]:
        return Section("Capacity", "capacity", [Para("No configuration completed with a figure.")])
    paper = [table] if (table := paper_table(results)) is not None else []
    usage = [t for t in (actions_table(results), per_user_table(results)) if t is not None]
    blocks: list[Block | Section] = [capacity_table(results), *usage, *paper, *_chart(charts, "capacity")]
    return Section("Capacity", "capacity", blocks)


def scaling(results: Results, charts: dict[str, Chart]) -> Section:
    section = Section("Scaling", "scaling")
    texts = [o["text"] for o in results["observations"] if o["topic"] == "scaling"]
    if not results["scaling"] and results.get("failover"):
        section.blocks.append(
            Para(
                "No scaling fit: a failover study's throughput holds the outages it measured, not what "
                "more of a resource carries."
            )
        )
    elif not results["scaling"]:
        section.blocks.append(
            Para(
                "No scaling fit: it needs a numeric factor with three or more values among the "
                "complete cells."
            )
        )
    for i, entry in enumerate(results["scaling"]):
        where = f" ({entry['group_label']})" if entry.get("group_label") else ""
        sub = Section(f"{entry['factor']}{where}", f"scaling-{i}", level=3)
        if i < len(texts):
            sub.blocks.append(Para(texts[i]))
        sub.blocks += fit_tables(entry)
        sub.blocks += _chart(charts, f"scaling-{i}")
        section.blocks.append(sub)
    return section


def over_time(results: Results) -> Section:
    entries = []
    labels = {c["index"]: c["label"] for c in results["cells"]}
    for series, chart in timeline_charts(results):
        kind = str(series["kind"]).removeprefix("search:")
        at = f" at {series['offered_rate']:g}/s" if series.get("offered_rate") else ""
        entries.append(
            ExplorerEntry(
                labels.get(series["cell"], ""),
                f"{kind} {(series['index'] or 0) + 1}{at}",
                chart,
                series["representative"],
            )
        )
    if not entries:
        return Section("Trials over time", "over-time", [Para("No trial was measured.")])
    intro = Para(
        "Each trial's throughput, latency and resource use on one time axis (the warm-up shaded). "
        "Pick a cell's trial; the confirmation trial at capacity (or the last fixed-load trial) is "
        "shown first."
    )
    return Section("Trials over time", "over-time", [intro, Explorer(entries)])


def observations(results: Results) -> Section:
    items = [_observation(o) for o in results["observations"]]
    return Section(
        "Observations",
        "observations",
        [Bullets(items) if items else Para("Nothing to observe: no cell completed.")],
    )


def recommendations(results: Results) -> Section:
    rec = results["recommendation"]
    blocks: list[Block | Section] = [Para(rec["text"], tone="callout")]
    if rec["ratings"]:
        blocks.append(ratings_table(results))
    if rec["advice"]:
        blocks.append(Bullets([Para(a) for a in rec["advice"]]))
    return Section("Recommendations", "recommendations", blocks)


def appendix(results: Results) -> Section:
    section = Section("Appendix: the searches and events", "appendix")
    unit = "users" if results["scenario"].get("model") == "closed" else "req/s"
    for c in results["cells"]:
        if (search := c["search"]) and search["trials"]:
            section.blocks.append(search_table(c, search, unit))
    if results["events"]:
        section.blocks.append(events_table(results))
    if not section.blocks:
        section.blocks.append(Para("No capacity search ran and no event was recorded."))
    return section


def build_report(results: Results) -> Report:
    study = results["study"]
    charts = summary_charts(results)
    when = f"{str(study.get('created_at') or '')[:16].replace('T', ' ')} UTC"
    took = f", {u.minutes(study['elapsed_s'])}" if u.is_number(study.get("elapsed_s")) else ""
    version = study.get("caplab_version") or ""
    subtitle = f"Study {study['id']} · {study['status']} · run {when}{took} · caplab {version}"
    return Report(
        f"Sizing report: {study['name']}",
        subtitle,
        [
            summary(results),
            *([findings] if (findings := findings_section(results)) else []),
            environment(results),
            scenario(results),
            matrix(results),
            results_section(results, charts),
            *([recovery] if (recovery := recovery_section(results)) else []),
            *([merged] if (merged := consolidation_section(results)) else []),
            *([job] if (job := job_section(results)) else []),
            capacity(results, charts),
            scaling(results, charts),
            over_time(results),
            observations(results),
            recommendations(results),
            appendix(results),
            *([method] if (method := methodology_section(results)) else []),
        ],
    )
