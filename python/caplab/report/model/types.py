"""The results document (results.json, schema ``caplab-report/1``) as types: every key the report
reads, so mypy checks the builders and the pages against one shape. The document is plain JSON —
these are TypedDicts, not classes — and the key order here is the order written to the file.

A figure the run did not measure is ``None`` (``null`` in the file), never NaN.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

# The analysis's own types, as the document holds them.
from caplab.analysis.limit import Limit as Limit
from caplab.analysis.steady import LittlesLaw as LittlesLaw

Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"
"""A value as the study file or the environment probe wrote it (a factor's level, a setting)."""
Factors: TypeAlias = dict[str, Json]
"""A cell's factors by name, in the study's order."""
Interval: TypeAlias = list[float | None]
"""A 95% interval ``[low, high]``; ``[None, None]`` when there is none."""
Unit: TypeAlias = Literal["req/s", "users", "items/s"]
Basis: TypeAlias = Literal["capacity", "throughput", "job"]
"""What a configuration is rated by: its searched capacity, or (not searched) the throughput it
carried at a fixed load — a lower bound —, or for a job one phase's items a second."""


class StudyInfo(TypedDict):
    id: int
    name: str
    status: str
    created_at: str | None
    finished_at: str | None
    elapsed_s: float | None
    spec_path: str | None
    store: str | None
    """The store's URL, password masked."""
    caplab_version: str | None


Environment: TypeAlias = dict[str, Json]
"""The host as recorded at the study's start: hostname, cpu_model, cores, memory_gb, disks, os,
python, versions, generator, storage_baseline, and whatever else the probe found."""


class Target(TypedDict, total=False):
    """What the load was sent to; empty when the study file names no target."""

    protocol: str
    url: str | None
    method: str | None
    framing: str | None
    body: str | None


class SearchSettings(TypedDict):
    precision: float
    trial_s: float | None
    confirm_s: float | None
    repeats: Json
    """As written: a number, or a factor's ``{placeholder}`` (so are ``start`` and ``max``)."""
    start: Json
    max: Json


class Scenario(TypedDict):
    description: str | None
    target: Target
    model: Literal["open", "closed"]
    rate: Json
    """As written: a number, or a factor's ``{placeholder}`` (so are ``users`` and ``repeat``)."""
    users: Json
    think_s: float | None
    usage: NotRequired[str | None]
    """A usage profile's actions per user, as written (``send 16 an hour, read 40 an hour``)."""
    schedule: str
    duration_s: float | None
    warmup_s: float | None
    repeat: Json
    slo: list[str]
    search: SearchSettings | None
    sut_start: str | None
    roles: list[str]
    app_metrics: bool


class Goal(TypedDict):
    rate: float
    """The load to carry, in ``unit`` (req/s unless the goal says otherwise)."""
    unit: NotRequired[Unit]
    """``users`` for a goal of users (the configurations are then rated in users)."""
    headroom: float
    """The fraction of capacity kept free for peaks and growth."""
    for_each: list[str]
    """Factors naming workloads sized each on its own (``goal.for_each``)."""


class Matrix(TypedDict):
    factors: dict[str, list[Json]]
    """Each factor's levels, in the order first met."""
    naming: list[str]
    """The factors a cell's label shows."""
    cells: int
    by_status: dict[str, int]


# --- one cell ---------------------------------------------------------------------------------


class Latency(TypedDict):
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p999: float | None
    max: float | None
    count: int | None


IntervalKind: TypeAlias = Literal["search", "replicates"]
"""What an interval is made of: one search's bracket (how precisely that run placed the capacity),
or a 95 % t-interval over replicates (how far another run would land). Only the second is a
confidence interval."""


class ActionRow(TypedDict):
    """One action of a usage profile over the confirmation trials at capacity."""

    name: str
    completed: int
    errors: int
    per_s: float
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class PerUserRow(TypedDict):
    """A usage profile's actions per user-hour: what it offered, what the users reached."""

    offered_per_hour: float
    achieved_per_hour: float


class CellCapacity(TypedDict):
    """A searched cell's capacity, as the search stored it."""

    value: float | None
    unit: Unit
    ci95: Interval
    interval: IntervalKind | None
    replicates: int
    found: bool
    message: str | None
    trial_count: int | None
    search_s: float | None
    precision: float | None
    slo: list[str]
    generator_saturated: bool
    at_least: float | None
    """When the generator stopped the search (inconclusive): the floor it proved, the generator's
    limit here — not a capacity of the system."""
    unstable: str | None
    """Confirmations above the capacity failed (a stall, a backlog) and the search kept the load
    below them that had passed: what failed above it."""
    actions: list[ActionRow]
    """A usage profile's actions at capacity (empty for a single request type)."""
    per_user: PerUserRow | None
    replicate_values: NotRequired[list[float]]
    """Each replicate's own capacity (empty for one search): the points a trend across cells fits."""


class ReplicatedFigure(TypedDict):
    """A fixed-load figure over the cell's replicates: their mean and its 95 % t-interval."""

    mean: float
    ci95: Interval


class ReplicateRun(TypedDict):
    """One replicate of a fixed-load cell: its own figures and when it began measuring."""

    started_at: str | None
    throughput: float | None
    p50_ms: float | None
    p99_ms: float | None
    error_ratio: float | None


class Replicated(TypedDict):
    """A fixed-load cell run as replicates: each headline figure as the replicates' mean with its
    95 % t-interval (a latency percentile only where every replicate's sample supports it)."""

    replicates: int
    throughput: ReplicatedFigure
    p50_ms: ReplicatedFigure | None
    p90_ms: ReplicatedFigure | None
    p95_ms: ReplicatedFigure | None
    p99_ms: ReplicatedFigure | None
    error_ratio: ReplicatedFigure
    runs: list[ReplicateRun]


class Metrics(TypedDict):
    """The cell's figures over its measured trials (those at capacity when it was searched)."""

    trials: int | None
    offered_rate: float | None
    users: int | None
    throughput: float | None
    throughput_stdev: float | None
    throughput_min: float | None
    throughput_max: float | None
    latency_ms: Latency
    service_time_ms: Latency
    sent: int | None
    completed: int | None
    errors: int | None
    dropped: int | None
    error_ratio: float | None
    consistency: str | None
    """``good``, ``fair`` or ``poor``: how steady the rate was interval to interval."""
    throughput_cv: float | None
    steady: bool | None
    steady_notes: list[str]
    littles_law: LittlesLaw | None
    generator_cpu_us_per_request: float | None
    generator_saturated: bool
    capacity: CellCapacity | None
    replicated: Replicated | None
    """A fixed-load cell's figures over its replicates (None: one replicate, or a search or job)."""
    app: dict[str, float | None]
    """The system's own counters (its metrics endpoint), by name."""


Resources: TypeAlias = dict[str, dict[str, float]]
"""Mean use per scope (a role, ``generator``, ``host``) and metric (``cpu_percent``,
``disk_busy_percent``, ``net_rx_mb_s`` …) over the measured windows."""


class Busiest(TypedDict):
    resource: str
    utilization: float


class SearchTrial(TypedDict):
    """One probe of the capacity search, in the order it ran."""

    phase: str
    load: float
    passed: bool
    reasons: list[str]
    offered_rate: float | None
    users: int | None
    throughput: float | None
    p50_ms: float | None
    p99_ms: float | None
    errors: int | None
    consistency: str | None
    busiest: Busiest | None


class Search(TypedDict):
    trials: list[SearchTrial]
    count: int
    rejected: int
    reasons: dict[str, int]
    """Rejections by kind (the SLO failed, ``not steady`` …), most frequent first."""


class TrialRow(TypedDict):
    """One measured trial of the cell: search probes and fixed-load trials alike."""

    index: int | None
    kind: str | None
    status: str | None
    offered_rate: float | None
    users: int | None
    throughput: float | None
    p50_ms: float | None
    p99_ms: float | None
    errors: int | None
    dropped: int | None
    warmup_s: float | None
    duration_s: float | None
    generator_cpu_us_per_request: float | None
    generator_saturated: bool


class VolumeUse(TypedDict):
    """One volume of a cell's profiles: what the system did to it (means over the measured trials)
    and what fio measured on it alone before the system started — the Connexion paper's "log at
    100 %, data under 5 %", read against what the volume's class gives."""

    role: str | None
    read_iops: float | None
    write_iops: float | None
    read_mb_s: float | None
    write_mb_s: float | None
    busy_percent: float | None
    ceiling_percent: float | None
    """The busiest figure against its class's throttle ceiling (None for an unthrottled class)."""
    await_ms: float | None
    alone_read_iops: float | None
    alone_write_iops: float | None


class RecoveryRow(TypedDict):
    """One action during a trial and how the load came through it (analysis/recovery.py)."""

    trial: int
    action: str
    at_s: float | None
    fault_s: NotRequired[float | None]
    """When the fault struck, the load's recovery's origin: the instant the action reported (its
    SIGKILL), else its start (``at_s``)."""
    took_s: float | None
    ok: bool
    outcome: str
    disrupted: bool | None
    recovery_s: float | None
    unavailable_s: float | None
    failed: int | None
    before_rps: float | None
    after_ratio: float | None
    resolution_s: float | None
    acknowledged: int | None
    """With a ledger: transactions the trial acknowledged, and how many of them the database lost."""
    lost: int | None


class DatabaseFailover(TypedDict):
    """One trial's failover read database by database (analysis/failover.py): the group-level
    time the system reported, the spread of the databases' own times, and the verdict against the
    study's recovery SLO (None without one)."""

    trial: int
    action: str
    databases: int
    group_s: float | None
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    not_recovered: list[str]
    failed: int
    resolution_s: float
    success: bool | None
    reasons: list[str]
    phases: NotRequired[FailoverPhases | None]
    """The HA manager's phases beside the clients', where the action reported them."""


class FailoverPhases(TypedDict):
    """One failover's timeline (analysis/phases.py ``Timeline``): the fault on the trial's clock and
    each phase in seconds after it — the HA manager's (detected, elected, promoted, writable) and
    the clients' (first commit, the last database's, the load back) — null where not seen."""

    fault_s: float
    detected_s: float | None
    elected_s: float | None
    promoted_s: float | None
    writable_s: float | None
    first_commit_s: float | None
    last_commit_s: float | None
    load_back_s: float | None
    resolution_s: float
    series_resolution_s: float
    set_by: dict[str, str]


class FailoverSuccess(TypedDict):
    """k of K failovers met the recovery SLO (``text``: ``k/K``), each failure with its reasons."""

    successes: int
    trials: int
    text: str
    failures: list[dict[str, Any]]


class CellCost(TypedDict):
    """The configuration's price as the study's ``cost:`` gives it (analysis/cost.py)."""

    total: float | None
    currency: str
    basis: str
    parts: list[list[Any]]
    unpriced: list[str]


class VolumeRating(TypedDict):
    """A volume's class and its endurance rating, from the study's ``volumes:``."""

    size: int
    dwpd: float | None
    years: float | None
    tbw: float | None


class CellResult(TypedDict):
    index: int
    label: str
    factors: Factors
    status: str
    error: str | None
    searched: bool
    roles: list[str]
    metrics: Metrics
    resources: Resources
    limit: Limit | None
    search: Search | None
    trials: list[TrialRow]
    hardware: dict[str, list[str]] | None
    """Each role's hardware profile in words (``8 cores, emulated as 2.0 host CPUs``), when the
    study put its roles on profiles."""
    placement: NotRequired[str | None]
    """Where the generator and the system ran (``generator on CPU 0; roles on CPU 1``), or why they
    shared the host's CPUs and what that means for the figures; None for cells run before."""
    volumes: dict[str, VolumeUse]
    """The cell's profile volumes by name (empty when it had none)."""
    recovery: list[RecoveryRow]
    """Actions during its trials (faults, role changes) and the load's recovery from each."""
    failover: list[DatabaseFailover]
    """Each failover trial read database by database (many databases in one target)."""
    success: FailoverSuccess | None
    cost: CellCost | None
    ratings: dict[str, VolumeRating]
    """Rated volumes by name (their class's DWPD and years, or TBW): their endurance is reported."""


# --- across cells ------------------------------------------------------------------------------


class CapacityEntry(TypedDict):
    """The figure a configuration is rated by (see ``Basis``)."""

    cell: int
    label: str
    factors: Factors
    basis: Basis
    value: float | None
    """None when a search found no capacity."""
    unit: Unit
    ci95: Interval
    interval: IntervalKind | None
    replicates: int
    indistinguishable: list[int]
    """The cells whose replicate intervals overlap this one's: not to be ranked against it."""
    found: bool
    message: str | None
    trials: int | None
    search_s: float | None
    consistency: str | None
    limit: str | None
    """The limiting resource's name."""
    headroom: float
    rate: float | None
    """The figure as a rate (a closed model's capacity in users is rated by its throughput)."""
    rated: float | None
    rated_unit: Unit
    """What ``rated`` is in: users where the search found users and the goal (if any) is users; else
    the rate (a closed model's capacity rated by the throughput measured at it)."""


class Point(TypedDict):
    n: float
    throughput: float


class Prediction(TypedDict):
    n: float
    throughput: float
    low: float
    high: float


Candidate = TypedDict(
    "Candidate",
    {
        "model": str,
        "lambda": float,
        "sigma": float,
        "kappa": float,
        "ci": dict[str, Interval],
        "r2": float,
        "peak_n": float | None,
        "peak_throughput": float | None,
        "holdout_error": float | None,
        "points": int,
        "distinct_n": int,
        "aicc": dict[str, float | None],
    },
)
"""The scalability law that fits best (``linear``, ``amdahl`` or ``usl``) by AICc, without its
predictions: as such, a law that was tried and found not to be a model of the points."""


class Fit(Candidate):
    """The best law when it is a model of the points, with what it predicts."""

    predictions: list[Prediction]


class ScalingEntry(TypedDict):
    """Capacity (or throughput) along one numeric factor, the others held at ``group``."""

    factor: str
    group: Factors
    metric: str
    cells: list[int]
    points: list[Point]
    fit: Fit | None
    """The law the points follow; null when none does (then nothing is predicted)."""
    note: NotRequired[str]
    """Why there is no fit: too few points, or ``no model fits — …`` with the reason."""
    candidate: NotRequired[Candidate]
    """The best law tried when it is not a model of the points: its R² and held-out error, no
    predictions."""
    peak: NotRequired[Point]
    """The measured peak (the highest mean at one N): what the points say without any model."""
    labels: list[str]
    group_label: str
    curve: list[Point]
    """The fitted law sampled for the chart."""


class Event(TypedDict):
    at: str | None
    kind: str | None
    message: str | None
    cell: int | None


class SeriesResources(TypedDict):
    t: list[float]
    cpu_percent: dict[str, list[float | None]]
    disk_busy_percent: list[float | None]
    net_rx_mb_s: list[float | None]
    net_tx_mb_s: list[float | None]
    app: dict[str, list[float | None]]


class TrialSeries(TypedDict):
    """One trial over time: ``t`` is each interval's end, in seconds since the trial started."""

    cell: int
    kind: str | None
    index: int | None
    offered_rate: float | None
    users: int | None
    warmup_s: float | None
    duration_s: float | None
    t: list[float]
    throughput: list[float | None]
    errors_per_s: list[float]
    in_flight: list[int | None]
    latency_p50_ms: list[float | None]
    latency_p99_ms: list[float | None]
    latency_max_ms: list[float | None]
    resources: SeriesResources
    representative: bool
    """The trial that stands for its cell in the charts on paper."""


# --- the text written from the data ------------------------------------------------------------


class Observation(TypedDict):
    topic: str
    severity: Literal["info", "warning"]
    text: str
    cells: list[int]


Rating = TypedDict(
    "Rating",
    {
        "cell": int,
        "label": str,
        "factors": Factors,
        "basis": Basis,
        "value": float,
        "unit": Unit,
        "rate": float,
        "ci95": Interval,
        "interval": IntervalKind | None,
        "rated": float,
        "rated_unit": Unit,
        "for": NotRequired[Factors],
        "cost": NotRequired[float | None],
        "cost_per_1000": NotRequired[float | None],
        "cost_per_item_s": NotRequired[float | None],
    },
)
"""What a configuration can be rated for: its figure less the headroom. ``for``: the workload
it serves, when the goal is met per workload."""


class Choice(Rating):
    margin: float
    margin_fraction: float


class Extrapolation(TypedDict):
    factor: str
    group: Factors
    n: int
    predicted: float
    model: str


class GoalMet(TypedDict):
    """How the goal is met by the tested configurations (or, failing that, by an extrapolation)."""

    needed: float
    """The capacity the goal needs once the headroom is kept."""
    choice: Choice | None
    extrapolated: Extrapolation | None
    text: str


Workload = TypedDict(
    "Workload",
    {
        "for": Factors,
        "needed": float,
        "choice": Choice | None,
        "extrapolated": Extrapolation | None,
        "text": str,
    },
)


class CheapestChoice(TypedDict):
    cell: int
    label: str
    cost: float
    cost_per_1000: float | None
    rated: float
    cost_per_item_s: NotRequired[float | None]
    """A job's configuration: its price per item a second of the phase that rates it."""


class CostSummary(TypedDict):
    """Prices against capacity: the cheapest configuration that meets the goal, and why."""

    currency: str
    basis: str
    cheapest: CheapestChoice | None
    text: str


class EnduranceRow(TypedDict):
    volume: str
    write_mb_s: float
    tb_per_day: float
    rated_tbw: float | None
    years: float | None


class RecommendationBody(TypedDict):
    """The recommendation before its text: the keys that come first in results.json."""

    goal: Goal | None
    headroom: float
    ratings: list[Rating]
    """Smallest configuration first."""
    choice: Choice | None
    choices: list[Choice]
    advice: list[str]
    basis: Basis | None
    needed: NotRequired[float | None]
    extrapolated: NotRequired[Extrapolation | None]
    workloads: NotRequired[list[Workload]]
    cost: NotRequired[CostSummary | None]
    endurance: NotRequired[list[EnduranceRow]]
    """Each rated volume of the chosen configuration, at the rate it was written there."""


class Recommendation(RecommendationBody):
    text: str


# --- the whole document ------------------------------------------------------------------------


class Comparison(TypedDict):
    """One resource, combined server against the sum of the single-role servers."""

    resource: str
    unit: str
    predicted: float
    actual: float
    ratio: float | None
    interval: list[float] | None
    verdict: str
    trials_apart: int
    trials_together: int


class PaperConsolidation(TypedDict):
    """The seed paper's consolidation figures for one configuration (``paper: {consolidation:}``), on
    its hardware: CPU in % of its server's cores, memory in MB."""

    source: str
    configuration: str
    cpu_predicted: float | None
    cpu_actual: float | None
    memory_predicted: float | None
    memory_actual: float | None


class ConsolidationEntry(TypedDict):
    """A cell together and its cell apart (the same other factors), compared per resource."""

    factors: Factors
    apart_cell: int
    together_cell: int
    roles: list[str]
    comparisons: list[Comparison]
    paper: PaperConsolidation | None
    """The paper's figures for this configuration, when the study gives them."""


class JobRow(TypedDict):
    cell: int
    label: str
    factors: Factors
    phase: str
    items_per_s: float | None
    ci95: list[float] | None
    wall_s: float | None
    limit: str | None
    paper: float | None
    """The paper's figure for the same phase, size and group, on its own hardware."""
    cost_per_item_s: float | None
    """The configuration's price per item a second of this phase (with ``cost:``)."""


class JobFit(TypedDict):
    phase: str
    group: str
    factor: str
    points: list[list[float]]
    fit: dict[str, Any] | None


class PaperRow(TypedDict):
    size: float
    ours: list[float | None]
    """Per group (``PaperTable.groups``), our items/s at this size; null where we ran no cell."""
    paper: list[float | None]
    """Per group, the paper's figure (its hardware); null where it gives none."""


class PaperTable(TypedDict):
    """One phase, ours beside the paper's: a row per size either of us ran, a pair of columns per
    group (the factor other than the size: the paper's internal and external storage)."""

    phase: str
    groups: list[str]
    rows: list[PaperRow]


class Jobs(TypedDict):
    size_factor: str | None
    paper_source: str | None
    rows: list[JobRow]
    fits: list[JobFit]
    endurance: list[JobEndurance]
    """Each configuration's rated volumes at the rate the job wrote them."""
    rated_by: str | None
    """The phase whose items/s rates a configuration (``goal.phase``, else the job's last)."""
    paper_tables: list[PaperTable]
    """With ``paper:``, each phase's rates beside the paper's, at every size either ran."""
    capacity: list[CapacityEntry]
    """Each configuration rated by that phase (at the largest size it ran, unless the goal is met
    for each size): what the recommendation sizes from."""


class JobEndurance(TypedDict):
    cell: int
    label: str
    volumes: list[EnduranceRow]


class PaperCapacityRow(TypedDict):
    """One configuration of a seed paper's table with ours beside it."""

    value: str
    """The factor value the paper's figure is for (a setup, a layout)."""
    paper: float | None
    paper_limit: str | None
    cells: list[int]
    ours: float | None
    """Our capacity for that value (the mean over its cells with one), None when none found one."""
    ours_limit: str | None
    """The resource our limit analysis named (``volume:log``, ``cpu:host``, ``network round trips``)."""
    ours_kind: str | None
    """Our limit in the paper's words: disk, cpu, memory, network, software or generator."""
    ours_consistency: str | None
    """good, fair or poor (the paper's Good/Fair column, from the interval-to-interval variation)."""
    paper_cpu_percent: float | None
    """The paper's CPU at that figure (``paper.cpu_percent``), in % of its server's cores."""
    paper_rate: float | None
    """The paper's messages per second at that figure (``paper.messages_per_s``)."""


class PaperComparison(TypedDict):
    """A seed paper's capacity table (``paper: {factor, capacity, limit}``) beside ours: its
    hardware, not ours — compare which resource limits and how the configurations rank."""

    source: str
    factor: str
    rows: list[PaperCapacityRow]
    recommendation: str | None
    """The configuration the paper recommends, in its words (``paper.recommendation``)."""


class PaperRecoveryRow(TypedDict):
    """One action at one of our database counts: the paper's group- and database-level recovery at
    the count ours stands for, beside ours (medians over the trials of the selected cells)."""

    action: str
    databases: int
    paper_databases: int | None
    paper_group_s: float | None
    paper_database_s: float | None
    group_s: float | None
    """Ours: fault → a primary writable, the median over the trials."""
    database_s: float | None
    """Ours: fault → the last database's first commit (the paper's DB level), median over trials."""
    trials: int


class PaperRecovery(TypedDict):
    """A seed paper's failover times (``paper: {recovery:}``) beside ours: its hardware and its
    mechanism (an availability group recovers database by database), not ours — compare shapes."""

    source: str
    cells: dict[str, str]
    """The cells ours are read from (``paper.cells``: the paper's conditions, e.g. no traffic)."""
    rows: list[PaperRecoveryRow]


class ActionRecovery(TypedDict):
    """One failover action over every trial that ran it (analysis/outage.py): recovery at group
    level (a primary writable, as the system reported it) and database level (each database's
    first commit, over every database of every trial), nearest-rank, good to ± ``resolution_s``."""

    action: str
    trials: int
    databases: list[int]
    """The database counts it ran at."""
    group_p50_s: float | None
    group_p95_s: float | None
    group_max_s: float | None
    database_p50_s: float | None
    database_p95_s: float | None
    database_max_s: float | None
    not_recovered: int
    """Databases (summed over trials) not back by the end of their trial."""
    resolution_s: float | None
    acknowledged: int | None
    """With a ledger: transactions acknowledged over the trials, and how many of them were lost."""
    lost: int | None
    successes: int | None
    judged: int
    """k of K: trials judged against the recovery SLO (``successes`` null without one)."""
    after_p50: float | None
    after_min: float | None
    """The load's throughput after recovery against before the fault, over the trials."""
    failed: int
    """Requests that failed in the outages: what the outage cost, not an anomaly."""
    phases: NotRequired[list[PhaseSpread]]
    """Each phase's end after the fault over the trials whose action reported its HA manager's."""
    steps: NotRequired[list[PhaseSpread]]
    """Each step's length (detection, election, …, reconnect) and its median share of the recovery."""
    isolated: NotRequired[IsolatedSides]
    """Where the action partitioned a node: what its isolated side did, over those trials."""


class IsolatedSides(TypedDict):
    """A partition's isolated sides over an action's trials (analysis/outage.py): writes taken
    there while another node led (a split brain), acknowledged writes lost, the latest demotion."""

    trials: int
    split_brain_writes: int
    lost: int
    demoted_max_s: float | None


class PhaseSpread(TypedDict):
    """A phase's end after the fault, or a step's length, over an action's trials (analysis/phases.py):
    nearest-rank p50/p95 and max; for a step, its median share of the recovery (to the clients'
    first commit) and what sets its length in the manager's words."""

    name: str
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    share: float | None
    set_by: str | None


class CellOutage(TypedDict):
    """A failover configuration's requests split at its outages, and its consistency judged on
    each side of them rather than across them."""

    cell: int
    label: str
    sent: int
    errors_inside: int
    errors_outside: int
    dropped_inside: int
    dropped_outside: int
    before_cv: float | None
    after_cv: float | None
    consistency_before: str | None
    """``good``, ``fair`` or ``poor`` (null: too few intervals on that side to judge)."""
    consistency_after: str | None


class FailoverSummary(TypedDict):
    """What a failover study measured (no capacity searched, failovers read): what its Summary
    leads with instead of a capacity recommendation."""

    actions: list[ActionRecovery]
    cells: list[CellOutage]


class Measured(TypedDict):
    """What the study measured, before any text is written from it."""

    schema: str
    generated_at: str
    study: StudyInfo
    environment: Environment
    scenario: Scenario
    goal: Goal | None
    matrix: Matrix
    cells: list[CellResult]
    capacity: list[CapacityEntry]
    scaling: list[ScalingEntry]
    events: list[Event]
    series: list[TrialSeries]
    consolidation: list[ConsolidationEntry]
    jobs: Jobs | None
    paper: NotRequired[PaperComparison | None]
    paper_recovery: NotRequired[PaperRecovery | None]
    """A failover paper's recovery times beside ours (``paper: {recovery:}``); null for any other."""
    failover: NotRequired[FailoverSummary | None]
    """A failover study's recovery per action and outages per configuration; null for any other."""


class PricedConfiguration(TypedDict):
    cell: int
    label: str
    cost: float | None
    rate: float
    unit: Unit
    cost_per_1000: float | None
    cost_per_item_s: float | None


class StudyCost(CostSummary):
    """results.json's ``cost``: what each rated configuration costs, and the cheapest (as in the
    recommendation: meeting the goal, or without one the lowest cost per capacity)."""

    configurations: list[PricedConfiguration]


class CellEndurance(TypedDict):
    """results.json's ``endurance``: a configuration's rated volumes at the rate it wrote them."""

    cell: int
    label: str
    chosen: bool
    """The recommended configuration (or the cheapest, without a goal)."""
    volumes: list[EnduranceRow]


class FindingFigure(TypedDict):
    """One figure a finding's verdict used: a cell's value and interval (``low == high``: no
    interval), or its limit or count in words (``value`` null)."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    text: str


class FindingEstimate(TypedDict):
    """What the verdict rests on: a ratio or a slope, with its interval."""

    name: str
    value: float
    low: float
    high: float | None
    """Null for a ratio without an upper bound (the divisor's interval reaches 0)."""
    text: str


class FindingEntry(TypedDict):
    """One of the study's ``findings:`` judged from its data (analysis/findings.py)."""

    claim: str
    paper: str | float | None
    """The paper's figure or words beside ours: its hardware, not this machine."""
    kind: str
    """compare, trend, limit, rank, success, no_loss or consolidation."""
    verdict: Literal["reproduced", "contradicted", "inconclusive"]
    reason: str
    figures: list[FindingFigure]
    estimates: list[FindingEstimate]


PrincipleKey: TypeAlias = Literal[
    "repetition", "intervals", "order", "drift", "steady_state", "generator", "environment", "units", "cost"
]
"""A principle of the methodology checklist (``analysis.methodology_types.Principle``'s values)."""
MethodologyGrade: TypeAlias = Literal["pass", "warn", "fail"]


class MethodologyChange(TypedDict):
    """What to change in the study file where it falls short of a principle."""

    setting: str | None
    """YAML the study parser accepts (merged into the file); null where no key can fix it yet."""
    why: str


class MethodologyItem(TypedDict):
    """One principle of the methodology checklist graded from the study's record
    (analysis/methodology.py)."""

    principle: PrincipleKey
    title: str
    grade: MethodologyGrade
    reason: str
    """Why, in the study's own figures and settings."""
    change: MethodologyChange | None


class Results(Measured):
    """results.json: the measurements and what the report says of them."""

    findings: list[FindingEntry]
    """The study's claims, each reproduced, contradicted or inconclusive, with its evidence."""
    observations: list[Observation]
    recommendation: Recommendation
    cost: StudyCost | None
    """Prices against capacity (with ``cost:``): also in the recommendation, kept there too."""
    endurance: list[CellEndurance]
    """Every configuration's rated volumes (with ``dwpd``/``tbw`` ratings) at its write rate."""
    methodology: list[MethodologyItem]
    """The checklist: repeated experiments, intervals, order, drift of the machine, steady state,
    generator, environment, units, cost — each passed, warned or failed, with its reason and what
    to change."""
