"""The report's tables, from the results document: the per-cell results (the Connexion paper's
summary table, made automatic), the matrix, the capacities, the scaling fits, the ratings, the
searches' probes, the environment and the storage baseline."""

from __future__ import annotations

from caplab import units as u
from caplab.analysis.endurance import Endurance, endurance_line
from caplab.analysis.limit import ROUND_TRIPS
from caplab.analysis.scaling import means_by_n
from caplab.report.layout.blocks import Column, Table, TableCell, kv_table, num_cell, text_cell
from caplab.report.model.scenario import goal_text
from caplab.report.model.types import (
    CapacityEntry,
    CellCapacity,
    CellResult,
    Json,
    Limit,
    PaperConsolidation,
    ReplicatedFigure,
    Results,
    ScalingEntry,
    Search,
)
from caplab.report.text.intervals import interval_kind
from caplab.report.text.recommend import rated, sustained

STATUS_TONE = {
    "complete": "good",
    "failed": "bad",
    "pending": "warn",
    "interrupted": "warn",
    "running": "warn",
}
CONSISTENCY_TONE = {"good": "good", "fair": "warn", "poor": "bad"}


def factor_names(results: Results, every: bool = False) -> list[str]:
    """The factor columns: those that name a cell, or ``every`` one (the matrix shows them all)."""
    m = results["matrix"]
    return list(m["factors"]) if every else list(m.get("naming") or m["factors"])


def _factor_columns(results: Results, every: bool = False) -> list[Column]:
    values = results["matrix"]["factors"]
    return [Column(n, all(u.is_number(v) for v in values[n])) for n in factor_names(results, every)]


def _factor_cells(results: Results, cell: CellResult, every: bool = False) -> list[TableCell]:
    out = []
    for name in factor_names(results, every):
        v = cell["factors"].get(name)
        shown = u.cell_label({"": v}).removeprefix("=")
        out.append(num_cell(v, shown) if u.is_number(v) else text_cell(shown))
    return out


def _status(cell: CellResult) -> TableCell:
    return text_cell(cell["status"], STATUS_TONE.get(cell["status"], ""))


def app_keys(results: Results) -> list[str]:
    return list(dict.fromkeys(k for c in results["cells"] for k in c["metrics"]["app"]))


def _limit_text(limit: Limit | None) -> TableCell:
    if not limit:
        return text_cell(u.DASH)
    if limit["kind"] == "hardware":
        return text_cell(f"{limit['resource']} {u.pct(limit['utilization'])}", "warn")
    if limit["kind"] == "not reached":
        return text_cell(f"not reached ({limit['resource']} {u.pct(limit['utilization'])})")
    if limit["resource"] == ROUND_TRIPS:  # software, but which: the link's round trips
        return text_cell(ROUND_TRIPS, "warn")
    return text_cell(str(limit["kind"]))


def _role_cpu(figures: dict[str, float]) -> TableCell:
    """A role's CPU in % of one host core and, on a profile's quota, of its profile's CPUs too."""
    used, quota = figures.get("cpu_percent"), figures.get("quota_cpus")
    if u.is_number(used) and u.is_number(quota) and quota:
        return num_cell(used, f"{u.num(used)} ({used / quota:.0f}% of profile)")
    return num_cell(used, u.num(used))


def results_table(results: Results) -> Table:
    """One row per cell: what it sustained, how fast, how steadily, with what resources, and its limit."""
    roles = list(dict.fromkeys(r for c in results["cells"] for r in c["roles"]))
    apps = app_keys(results)
    searched = any(c["searched"] for c in results["cells"])
    columns = [Column("#", True), *_factor_columns(results), Column("status")]
    if searched:
        columns.append(Column("capacity", True, "req/s [interval]"))
    columns += [
        Column("throughput", True, "req/s"),
        Column("p50", True, "ms"),
        Column("p99", True, "ms"),
        Column("p99.9", True, "ms"),
        Column("errors", True, "%"),
        Column("consistency"),
        *(Column(f"CPU {r}", True, "%") for r in roles),
        Column("CPU generator", True, "%"),
        Column("CPU host", True, "%"),
        Column("disk busy", True, "%"),
        Column("network", True, "MB/s"),
        *(Column(k.replace("_", " "), True) for k in apps),
        Column("limit", wrap=True),
    ]
    rows = []
    for c in results["cells"]:
        m, res = c["metrics"], c["resources"]
        host = res.get("host") or {}
        row = [num_cell(c["index"], str(c["index"])), *_factor_cells(results, c), _status(c)]
        if searched:
            row.append(_capacity_cell(m["capacity"]))
        lat = m["latency_ms"]
        net = [v for v in (host.get("net_rx_mb_s"), host.get("net_tx_mb_s")) if u.is_number(v)]
        error_pct = 100 * m["error_ratio"] if u.is_number(m["error_ratio"]) else None
        rep = m["replicated"]
        row += [
            _replicated_cell(m["throughput"], rep["throughput"] if rep else None),
            _replicated_cell(lat["p50"], rep["p50_ms"] if rep else None),
            _replicated_cell(lat["p99"], rep["p99_ms"] if rep else None),
            num_cell(lat["p999"], u.num(lat["p999"])),
            TableCell(u.num(error_pct), error_pct, "bad" if error_pct else ""),
            text_cell(m["consistency"] or u.DASH, CONSISTENCY_TONE.get(m["consistency"] or "", "")),
            *(_role_cpu(res.get(r) or {}) for r in roles),
            num_cell(g := (res.get("generator") or {}).get("cpu_percent"), u.num(g)),
            num_cell(host.get("cpu_percent"), u.num(host.get("cpu_percent"))),
            num_cell(host.get("disk_busy_percent"), u.num(host.get("disk_busy_percent"))),
            num_cell(sum(net) if net else None, u.num(sum(net)) if net else u.DASH),
            *(num_cell(m["app"].get(k), u.num(m["app"].get(k))) for k in apps),
            _limit_text(c["limit"]),
        ]
        rows.append(row)
    cores = results["environment"].get("cores")
    whole = f"the host has {cores:g} cores, so {100 * cores:g}% is all of it" if u.is_number(cores) else ""
    note = (
        "Throughput and latency are those of the trials at capacity (searched cells) or at the fixed "
        f"load. CPU is in % of one core, as top shows it{': ' + whole if whole else ''}; a role on a "
        "hardware profile's CPU quota also in % of its profile's CPUs. Network: received + sent, all "
        "interfaces. Latency is timed from the intended send time."
    )
    if any(c["metrics"]["replicated"] for c in results["cells"]):
        note += (
            " A fixed load run as replicates gives its throughput, p50 and p99 as the replicates' mean "
            "with its 95% interval over them; p99.9 is that of all their requests together."
        )
    if apps:
        note += (
            " The last figures before the limit are the system's own counters (per second where named so)."
        )
    return drop_empty_columns(Table(columns, rows, caption="Results per configuration", note=note))


def _replicated_cell(value: float | None, replicated: ReplicatedFigure | None) -> TableCell:
    """A fixed-load figure: over replicates, their mean with its 95 % interval; else the trials'."""
    if replicated is None:
        return num_cell(value, u.num(value))
    low, high = replicated["ci95"]
    return num_cell(replicated["mean"], f"{u.num(replicated['mean'])} {u.interval(low, high)}")


def _capacity_cell(cap: CellCapacity | None) -> TableCell:
    """A searched cell's capacity with its interval and what kind it is; a search the generator
    stopped shows only the floor it proved, and one that fell back below failing confirmations
    says so."""
    value = cap["value"] if cap else None
    low, high = cap["ci95"] if cap else [None, None]
    kind = interval_kind(cap["interval"], cap["replicates"]) if cap else ""
    shown = u.num(value) + (f" {u.interval(low, high)} {kind}".rstrip() if low is not None else "")
    if cap and cap["at_least"] is not None:
        shown = f"≥ {u.num(cap['at_least'])} (generator's limit)"
    elif cap and cap["unstable"]:
        shown += " (unstable above)"
    return num_cell(value, shown)


def volumes_table(results: Results) -> Table | None:
    """One row per volume of each cell's profiles: what the system made it do against what it gave
    alone (fio before the system started) and against its class's ceiling — which volume was the
    bottleneck and which sat idle, read straight off."""
    rows = []
    for c in results["cells"]:
        for name, v in c["volumes"].items():
            rows.append(
                [
                    num_cell(c["index"], str(c["index"])),
                    *_factor_cells(results, c),
                    text_cell(f"{v['role']}/{name}" if v["role"] and "/" not in name else name),
                    *(
                        num_cell(x, u.num(x))
                        for x in (
                            v["read_iops"],
                            v["write_iops"],
                            v["read_mb_s"],
                            v["write_mb_s"],
                            v["busy_percent"],
                            v["ceiling_percent"],
                            v["await_ms"],
                            v["alone_read_iops"],
                            v["alone_write_iops"],
                        )
                    ),
                ]
            )
    if not rows:
        return None
    columns = [
        Column("#", True),
        *_factor_columns(results),
        Column("volume"),
        Column("reads", True, "/s"),
        Column("writes", True, "/s"),
        Column("read", True, "MB/s"),
        Column("write", True, "MB/s"),
        Column("busy", True, "%"),
        Column("of ceiling", True, "%"),
        Column("await", True, "ms"),
        Column("alone: reads", True, "/s"),
        Column("alone: writes", True, "/s"),
    ]
    note = (
        "Means over the measured trials. 'Of ceiling': the busiest figure against the throttle of the "
        "volume's class. 'Alone': fio's 8 KiB random reads and writes on the fresh volume, inside its "
        "role's profile, before the system started (the study's storage_baseline settings)."
    )
    return drop_empty_columns(Table(columns, rows, caption="Disk use per volume", note=note))


def recovery_table(results: Results) -> Table | None:
    """One row per action during a trial: what was done, when, and how the load came through it."""
    rows = []
    for c in results["cells"]:
        for r in c["recovery"]:
            back = (
                "no disruption"
                if r["disrupted"] is False
                else u.DASH
                if r["disrupted"] is None
                else "not recovered"
                if r["recovery_s"] is None
                else f"{r['recovery_s']:.1f} s"
            )
            rows.append(
                [
                    num_cell(c["index"], str(c["index"])),
                    *_factor_cells(results, c),
                    num_cell(r["trial"] + 1, str(r["trial"] + 1)),  # stored 0-based, shown from 1
                    text_cell(r["action"]),
                    num_cell(r["at_s"], u.num(r["at_s"])),
                    num_cell(r["took_s"], u.num(r["took_s"])),
                    text_cell(r["outcome"], "" if r["ok"] else "bad"),
                    text_cell(back, "bad" if r["disrupted"] and r["recovery_s"] is None else ""),
                    num_cell(r["unavailable_s"], u.num(r["unavailable_s"])),
                    num_cell(r["failed"], u.num(r["failed"])),
                    num_cell(r["before_rps"], u.num(r["before_rps"])),
                    num_cell(r["after_ratio"], u.pct(r["after_ratio"])),
                    num_cell(r["acknowledged"], u.num(r["acknowledged"])),
                    TableCell(u.num(r["lost"]), r["lost"], "bad" if r["lost"] else ""),
                ]
            )
    if not rows:
        return None
    columns = [
        Column("#", True),
        *_factor_columns(results),
        Column("trial", True),
        Column("action"),
        Column("at", True, "s"),
        Column("took", True, "s"),
        Column("outcome", wrap=True),
        Column("recovered after"),
        Column("no completion", True, "s"),
        Column("failed", True, "requests"),
        Column("before", True, "req/s"),
        Column("after", True, "of before"),
        Column("acknowledged", True, "transactions"),
        Column("lost", True, "acknowledged"),
    ]
    widths = {r["resolution_s"] for c in results["cells"] for r in c["recovery"] if r["resolution_s"]}
    resolution = f" ± {max(widths):g} s, the interval series' resolution" if widths else ""
    note = (
        "Times from the load's start (warm-up included). Recovered: the first of two intervals in a row "
        "with no errors and at least 90 % of the throughput before the action"
        f"{resolution}. 'After' is read once the requests held through the outage have drained. With a "
        "ledger, 'lost' is the acknowledged transactions the database no longer holds afterwards (a lower "
        "bound: a commit whose acknowledgement the failure swallowed is held but not counted)."
    )
    table = Table(columns, rows, caption="Actions during the trials and the load's recovery", note=note)
    return drop_empty_columns(table)


def job_table(results: Results) -> Table | None:
    """Each phase's rate per configuration, with the paper's own figure beside it when the study
    gives one (on the paper's hardware, not ours: compare shapes, not values)."""
    jobs = results["jobs"]
    if not jobs or not jobs["rows"]:
        return None
    with_paper = any(r["paper"] is not None for r in jobs["rows"])
    with_cost = any(r["cost_per_item_s"] is not None for r in jobs["rows"])
    columns = [
        Column("#", True),
        *_factor_columns(results),
        Column("phase"),
        Column("ours", True, "items/s [95% interval]"),
        Column("wall", True, "s"),
        Column("limit"),
        *([Column("paper", True, "items/s, its hardware")] if with_paper else []),
        *([Column("cost per item/s", True)] if with_cost else []),
    ]
    rows = []
    by_index = {c["index"]: c for c in results["cells"]}
    for r in jobs["rows"]:
        rate, ci = r["items_per_s"], r["ci95"]
        shown = u.num(rate) + (f" {u.interval(ci[0], ci[1])}" if ci else "")
        row = [
            num_cell(r["cell"], str(r["cell"])),
            *_factor_cells(results, by_index[r["cell"]]),
            text_cell(r["phase"]),
            num_cell(rate, shown),
            num_cell(r["wall_s"], u.num(r["wall_s"])),
            text_cell(r["limit"] or u.DASH),
        ]
        if with_paper:
            row.append(num_cell(r["paper"], u.num(r["paper"])))
        if with_cost:
            row.append(num_cell(r["cost_per_item_s"], u.num(r["cost_per_item_s"])))
        rows.append(row)
    note = (
        "Items per second of each phase over its wall time, mean over the job's repeats (interval: t, 95 %)."
    )
    if with_paper and jobs["paper_source"]:
        note += f" Paper: {jobs['paper_source']}."
    return Table(columns, rows, caption="Batch job: each phase's rate", note=note)


def paper_tables(results: Results) -> list[Table]:
    """The paper's tables with ours beside them: per phase, a row per size (the paper's sizes we did
    not run with its figures alone), per group our items/s and the paper's, on its hardware."""
    jobs = results["jobs"]
    out = []
    for t in jobs["paper_tables"] if jobs else []:
        columns = [Column(jobs["size_factor"] if jobs and jobs["size_factor"] else "size", True)]
        for g in t["groups"]:
            columns += [
                Column(f"{g} (ours)", True, "items/s"),
                Column(f"{g} (paper's hardware)", True, "ops/s"),
            ]
        rows = []
        for r in t["rows"]:
            row = [num_cell(r["size"], u.num(r["size"]))]
            for ours, theirs in zip(r["ours"], r["paper"], strict=True):
                row += [num_cell(ours, u.num(ours)), num_cell(theirs, u.num(theirs))]
            rows.append(row)
        note = (
            "Ours measured on this machine's emulated hardware, the paper's on its own: compare the shapes "
            "(how the rate falls with size, which layout is faster), not the values."
        )
        if jobs and jobs["paper_source"]:
            note += f" Paper: {jobs['paper_source']}."
        out.append(Table(columns, rows, caption=f"{t['phase']}: ours beside the paper's", note=note))
    return out


def job_fit_lines(results: Results) -> list[str]:
    """Per phase and group: the shape of the rate against the size, and points against the trend."""
    jobs = results["jobs"]
    out = []
    for f in jobs["fits"] if jobs else []:
        where = f" ({f['group']})" if f["group"] else ""
        fit = f["fit"]
        if fit is None:
            out.append(f"{f['phase']}{where}: too few sizes to fit a shape against {f['factor']}.")
            continue
        against = ", ".join(u.num(n) for n in fit["against_trend"])
        flag = f" Against the trend: {f['factor']} = {against}." if against else ""
        out.append(f"{f['phase']}{where}, against {f['factor']}: {fit['description']}.{flag}")
    for worn in jobs["endurance"] if jobs else []:
        lines = [Endurance(**v) for v in worn["volumes"]]
        out.append(f"Drive wear, {worn['label']}: " + " ".join(endurance_line(e) + "." for e in lines))
    return out


def consolidation_table(results: Results) -> Table | None:
    """The Exchange paper's test 2 table: per resource, the sum of the single-role servers (the
    prediction) against the combined server (the measurement), with the ratio and its verdict."""
    rows = []
    papers = [p for e in results["consolidation"] if (p := e.get("paper")) is not None]
    for entry in results["consolidation"]:
        where = " ".join(f"{k}={v}" for k, v in entry["factors"].items()) or "—"
        for c in entry["comparisons"]:
            interval = c["interval"]
            ratio = u.num(c["ratio"]) + (f" {u.interval(interval[0], interval[1])}" if interval else "")
            tone = "" if c["verdict"] == "additive" else "warn"
            row = [
                text_cell(where),
                text_cell(c["resource"]),
                text_cell(c["unit"]),
                num_cell(c["predicted"], u.num(c["predicted"])),
                num_cell(c["actual"], u.num(c["actual"])),
                num_cell(c["ratio"], ratio),
                text_cell(c["verdict"], tone),
                text_cell(f"#{entry['apart_cell']} / #{entry['together_cell']}"),
            ]
            if papers:
                row += _paper_consolidation_cells(entry.get("paper"), c["resource"])
            rows.append(row)
    if not rows:
        return None
    columns = [
        Column("configuration"),
        Column("resource"),
        Column("unit"),
        Column("predicted", True, "sum apart"),
        Column("actual", True, "together"),
        Column("ratio", True, "[95% interval]"),
        Column("verdict"),
        Column("cells", wrap=True),
    ]
    if papers:
        columns += [
            Column("paper: predicted", True, "its hardware"),
            Column("paper: actual", True, "its hardware"),
            Column("paper: ratio", True),
        ]
    note = (
        "Predicted: the roles' use added up when each ran on a profile of its own; actual: the same roles "
        "sharing one profile, under the same load. Means over each placement's trials (a searched cell's "
        "confirmation trials at its capacity, the combined server's CPU scaled to the load the single-role "
        "servers carried; memory as measured); the interval is the ratio's, from the trials' spread. "
        "Additive when the ratio is within ±10 % or its interval holds 1."
    )
    if papers:
        note += (
            f" The paper's figures ({papers[0]['source']}): CPU in % of its combined server's cores, "
            "memory in MB: compare the ratios, not the values."
        )
    return Table(
        columns, rows, caption="Consolidation: single-role servers against one combined server", note=note
    )


def _paper_consolidation_cells(paper: PaperConsolidation | None, resource: str) -> list[TableCell]:
    """The paper's predicted, actual and their ratio for the row's resource (CPU or memory)."""
    if paper is None or resource not in ("CPU", "memory"):
        return [text_cell(u.DASH)] * 3
    if resource == "CPU":
        predicted, actual = paper["cpu_predicted"], paper["cpu_actual"]
    else:
        predicted, actual = paper["memory_predicted"], paper["memory_actual"]
    ratio = actual / predicted if predicted and actual is not None else None
    return [
        num_cell(predicted, u.num(predicted)),
        num_cell(actual, u.num(actual)),
        num_cell(ratio, u.num(ratio)),
    ]


def drop_empty_columns(table: Table) -> Table:
    """Leaves out figure columns no row has a value for (p99.9 of short trials, an unsampled disk)."""
    keep = [
        i
        for i, col in enumerate(table.columns)
        if not col.numeric or any(row[i].text != u.DASH for row in table.rows)
    ]
    return Table(
        [table.columns[i] for i in keep],
        [[row[i] for i in keep] for row in table.rows],
        table.caption,
        table.note,
        table.sortable,
        table.key_value,
    )


def matrix_table(results: Results) -> Table:
    columns = [
        Column("#", True),
        *_factor_columns(results, every=True),
        Column("status"),
        Column("trials", True),
        Column("search time", True),
        Column("note", wrap=True),
    ]
    rows = []
    for c in results["cells"]:
        cap = c["metrics"]["capacity"]
        seconds = cap["search_s"] if cap else None
        note = c["error"] or ((cap["message"] if cap else None) or "")
        rows.append(
            [
                num_cell(c["index"], str(c["index"])),
                *_factor_cells(results, c, every=True),
                _status(c),
                num_cell(len(c["trials"]), str(len(c["trials"]))),
                num_cell(seconds, u.minutes(seconds)),
                text_cell(note),
            ]
        )
    return Table(columns, rows, caption="The test matrix")


def _interval_text(e: CapacityEntry) -> str:
    shown = (
        f"{u.interval(e['ci95'][0], e['ci95'][1], e['unit'])} {interval_kind(e['interval'], e['replicates'])}"
    )
    if e["interval"] == "replicates" and e["indistinguishable"]:
        shown += " ≈ #" + ", #".join(str(c) for c in e["indistinguishable"])
    return shown.strip()


def _capacity_text(e: CapacityEntry, cell: CellResult) -> str:
    """The capacity found, or the floor a generator-limited search proved, or that none was found."""
    cap = cell["metrics"]["capacity"]
    if e["found"]:
        return u.load(e["value"], e["unit"]) + (" (unstable above)" if cap and cap["unstable"] else "")
    if cap and cap["at_least"] is not None:
        return f"≥ {u.load(cap['at_least'], e['unit'])} (the generator's limit here)"
    return "not found"


def capacity_table(results: Results) -> Table:
    headroom = results["recommendation"]["headroom"]
    columns = [
        Column("#", True),
        Column("configuration"),
        Column("capacity", True, "req/s"),
        Column("interval"),
        Column(f"rated ({u.pct(headroom)} headroom)", True, "req/s"),
        Column("trials", True),
        Column("search time", True),
        Column("rejected", True),
        Column("consistency"),
        Column("limit", wrap=True),
    ]
    by_cell = {c["index"]: c for c in results["cells"]}
    ratings = {r["cell"]: r for r in results["recommendation"]["ratings"]}
    rows = []
    for e in results["capacity"]:
        cell = by_cell[e["cell"]]
        r = ratings.get(e["cell"])
        rated = r["rated"] if r else None
        rejected = cell["search"]["rejected"] if cell["search"] else None
        rows.append(
            [
                num_cell(e["cell"], str(e["cell"])),
                text_cell(e["label"]),
                num_cell(e["value"], _capacity_text(e, cell)),
                text_cell(_interval_text(e)),
                num_cell(rated, u.load(rated, r["rated_unit"]) if r else u.DASH),
                num_cell(e["trials"], u.num(e["trials"])),
                num_cell(e["search_s"], u.minutes(e["search_s"])),
                num_cell(rejected, u.num(rejected)),
                text_cell(e["consistency"] or u.DASH, CONSISTENCY_TONE.get(e["consistency"] or "", "")),
                _limit_text(cell["limit"]),
            ]
        )
    basis = "capacity" if any(e["basis"] == "capacity" for e in results["capacity"]) else "throughput"
    replicated = [e for e in results["capacity"] if e["interval"] == "replicates"]
    searched = "Capacity: the highest load at which the SLO held in every confirmation trial. " + (
        f"Each was searched {replicated[0]['replicates']} times, each time on a fresh start of the system; "
        "the figure is their mean and the interval their 95% t-interval (at least as wide as the searches' "
        "own brackets). Configurations whose intervals "
        "overlap are marked ≈: they are not distinguishable, whatever their order."
        if replicated
        else "Each configuration was searched once: its interval is that search's bracket (the confirmed "
        "load less the confirmation trials' spread, up to the lowest load that failed), which says how "
        "precisely the run placed its capacity — not a confidence interval. Runs vary more than that on a "
        "shared machine; `replicates:` measures by how much."
    )
    fixed = "No cell was searched: the figure is the throughput measured at the offered load (a lower bound)."
    note = searched if basis == "capacity" else fixed
    return Table(columns, rows, caption=f"{basis.capitalize()} per configuration", note=note)


def measured_table(entry: ScalingEntry) -> Table:
    """The points alone, their peak marked: what is shown when no law is a model of them."""
    peak = entry.get("peak")
    rows = [
        [
            num_cell(n, u.num(n)),
            num_cell(x, u.num(x)),
            text_cell("peak" if peak and n == peak["n"] else ""),
        ]
        for n, x in means_by_n(entry["points"])
    ]
    return Table(
        [Column(entry["factor"], True), Column("measured", True, "req/s"), Column("")],
        rows,
        caption="Measured (no model fits: nothing is predicted)",
        sortable=False,
    )


def fit_tables(entry: ScalingEntry) -> list[Table]:
    fit = entry.get("fit")
    if not fit:
        return [measured_table(entry)] if entry.get("candidate") else []
    ci = fit.get("ci") or {}

    def param(name: str, key: str, value: float) -> list[TableCell]:
        low, high = ci.get(key, [None, None])
        return [text_cell(name), num_cell(value, u.num(value)), text_cell(u.interval(low, high))]

    params = [
        param("λ (throughput of one unit, /s)", "lambda", fit["lambda"]),
        param("σ (contention)", "sigma", fit["sigma"]),
        param("κ (coherency)", "kappa", fit["kappa"]),
    ]
    params += [
        [text_cell("R²"), num_cell(fit["r2"], u.num(fit["r2"])), text_cell("")],
        [
            text_cell("held-out error"),
            num_cell(fit["holdout_error"], u.pct(fit["holdout_error"])),
            text_cell(""),
        ],
        [text_cell("peak N*"), num_cell(fit["peak_n"], u.num(fit["peak_n"])), text_cell("")],
    ]
    aicc = fit.get("aicc") or {}
    params.append(
        [
            text_cell("AICc linear / Amdahl / USL"),
            text_cell(" / ".join(u.num(aicc.get(m)) for m in ("linear", "amdahl", "usl"))),
            text_cell(""),
        ]
    )
    parameters = Table(
        [Column("parameter"), Column("value", True), Column("95% interval")],
        params,
        caption=f"Fitted {fit['model']} model",
        sortable=False,
    )
    measured: dict[float, list[float]] = {}
    for p in entry["points"]:
        measured.setdefault(p["n"], []).append(p["throughput"])
    rows = []
    for p in fit.get("predictions") or []:
        got = measured.get(p["n"])
        mean = sum(got) / len(got) if got else None
        rows.append(
            [
                num_cell(p["n"], u.num(p["n"])),
                num_cell(mean, u.num(mean) if got else "untested"),
                num_cell(p["throughput"], u.num(p["throughput"])),
                text_cell(u.interval(p["low"], p["high"])),
            ]
        )
    predictions = Table(
        [
            Column(entry["factor"], True),
            Column("measured", True, "req/s"),
            Column("model", True, "req/s"),
            Column("95% interval", False, "req/s"),
        ],
        rows,
        caption="Measured and predicted",
    )
    return [parameters, predictions]


def ratings_table(results: Results) -> Table:
    rec = results["recommendation"]
    goal = results["goal"]
    jobs = results["jobs"]
    job = rec["basis"] == "job"
    in_users = bool(rec["ratings"]) and rec["ratings"][0]["rated_unit"] == "users"
    unit = "items/s" if job else "users" if in_users else "req/s"
    columns = [
        Column("configuration"),
        Column(f"{jobs['rated_by']} phase" if job and jobs else rec["basis"] or "figure", True, unit),
        Column(f"rated ({u.pct(rec['headroom'])} headroom)", True, unit),
    ]
    if goal:
        columns.append(Column(f"meets {goal_text(goal)}"))
    costs = rec.get("cost")
    if costs:
        price = costs["currency"] + (" /h" if costs["basis"] == "hour" else "")
        per = "cost per item/s" if job else "cost per 1,000 users" if in_users else "cost per 1,000/s"
        columns += [Column("cost", True, price), Column(per, True, price)]
    rows = []
    chosen = {c["cell"] for c in rec.get("choices") or []}
    for r in rec["ratings"]:
        row = [
            text_cell(
                r["label"] + ("  ◀ recommended" if r["cell"] in chosen else ""),
                "good" if r["cell"] in chosen else "",
            ),
            num_cell(r["value"], sustained(r)),
            num_cell(r["rated"], rated(r)),
        ]
        if goal:
            meets = r["rated"] >= goal["rate"]
            row.append(text_cell("yes" if meets else "no", "good" if meets else "bad"))
        if costs:
            cost, each = r.get("cost"), r.get("cost_per_item_s") if job else r.get("cost_per_1000")
            row += [num_cell(cost, u.num(cost)), num_cell(each, u.num(each))]
        rows.append(row)
    return Table(columns, rows, caption="What each configuration can be rated for", sortable=False)


def search_table(cell: CellResult, search: Search, unit: str) -> Table:
    rows = []
    for i, t in enumerate(search["trials"]):
        verdict = "pass" if t["passed"] else "fail"
        rows.append(
            [
                num_cell(i + 1, str(i + 1)),
                text_cell(t["phase"]),
                num_cell(t["load"], u.load(t["load"], unit)),
                num_cell(t["throughput"], u.rate(t["throughput"])),
                num_cell(t["p50_ms"], u.num(t["p50_ms"])),
                num_cell(t["p99_ms"], u.num(t["p99_ms"])),
                text_cell(verdict, "good" if t["passed"] else "bad"),
                text_cell("; ".join(t["reasons"])),
            ]
        )
    columns = [
        Column("#", True),
        Column("phase"),
        Column("load", True),
        Column("throughput", True, "req/s"),
        Column("p50", True, "ms"),
        Column("p99", True, "ms"),
        Column("verdict"),
        Column("why rejected", wrap=True),
    ]
    return Table(columns, rows, caption=f"{cell['label']}: the search's trials in order")


def environment_table(results: Results) -> Table:
    env = results["environment"]
    disks = env.get("disks")
    disk_text = (
        "; ".join(
            f"{d.get('name')}: {d.get('model') or 'unknown model'}, {u.num(d.get('size_gb'))} GB, "
            f"{'rotational' if d.get('rotational') else 'solid state'}"
            for d in disks
            if isinstance(d, dict)
        )
        if isinstance(disks, list) and disks
        else "not recorded"
    )
    rows = [
        ("Host", str(env.get("hostname") or u.DASH)),
        ("CPU", str(env.get("cpu_model") or u.DASH)),
        ("Cores", u.num(env.get("cores"))),
        ("Memory", f"{u.num(env.get('memory_gb'))} GB" if env.get("memory_gb") is not None else u.DASH),
        ("Disks", disk_text),
        ("Operating system", str(env.get("os") or u.DASH)),
        ("Python", str(env.get("python") or u.DASH)),
        ("caplab", str(env.get("caplab_version") or results["study"].get("caplab_version") or u.DASH)),
        ("Load engine", str(env.get("engine_version") or u.DASH)),
        ("Load generator", str(env.get("generator") or u.DASH)),
        ("Results store", str(results["study"].get("store") or u.DASH)),
    ]
    known = {
        "hostname",
        "cpu_model",
        "cores",
        "memory_gb",
        "disks",
        "os",
        "python",
        "caplab_version",
        "engine_version",
        "generator",
        "storage_baseline",
    }
    rows += [
        (k.replace("_", " "), u.free_text(v))
        for k, v in env.items()
        if k not in known and not isinstance(v, dict | list)
    ]
    return kv_table(rows, "Where the study ran")


def _json_object(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def storage_table(baseline: dict[str, Json]) -> Table | None:
    """The fio jobs of the storage baseline (the environment keeps it as the probe wrote it)."""
    found = baseline.get("jobs")
    jobs = [j for j in found if isinstance(j, dict)] if isinstance(found, list) else []
    if not jobs:
        return None
    rows = []
    for j in jobs:
        lat = _json_object(j.get("lat_ms"))
        rows.append(
            [
                text_cell(str(j.get("name"))),
                num_cell(j.get("iops"), u.num(j.get("iops"))),
                num_cell(j.get("mb_s"), u.num(j.get("mb_s"))),
                num_cell(lat.get("mean"), u.num(lat.get("mean"))),
                num_cell(lat.get("p50"), u.num(lat.get("p50"))),
                num_cell(lat.get("p99"), u.num(lat.get("p99"))),
            ]
        )
    columns = [
        Column("test"),
        Column("IO/s", True),
        Column("MB/s", True),
        Column("mean latency", True, "ms"),
        Column("p50", True, "ms"),
        Column("p99", True, "ms"),
    ]
    return Table(columns, rows, caption=f"Storage baseline ({baseline.get('tool', 'fio')})", sortable=False)


def events_table(results: Results) -> Table:
    rows = [
        [
            text_cell(str(e["at"] or "")[:19].replace("T", " ")),
            text_cell("" if e["cell"] is None else str(e["cell"])),
            text_cell(str(e["kind"])),
            text_cell(u.free_text(e["message"])),
        ]
        for e in results["events"]
    ]
    return Table(
        [Column("at (UTC)"), Column("cell"), Column("kind"), Column("message", wrap=True)],
        rows,
        caption="Events",
    )
