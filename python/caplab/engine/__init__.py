"""The Python face of the load engine: typed plans in, typed results out.

A plan is plain data (``plan``); the Rust engine validates it again and names the field when
something is wrong. ``build`` is the one way from a load description to a plan; ``boundary``
calls the compiled engine, which runs with the GIL released and streams interval snapshots to an
optional callback; ``result`` holds what a run returns (the only part analysis may import).
Ctrl-C stops the run and returns what was measured, with ``interrupted`` set.
"""

from caplab._engine import PlanError, TargetUnreachable, WorkerFailed
from caplab.engine.boundary import ENGINE_VERSION, merge_histograms, run, summarize_histogram
from caplab.engine.build import (
    SECONDS_PER_HOUR,
    LoadSpec,
    UsageAction,
    UsageProblem,
    build_plan,
    usage_classes,
    usage_think_s,
)
from caplab.engine.plan import (
    DEFAULT_RECONNECT_BACKOFF_MS,
    MAIL_ACTIONS,
    Arrivals,
    ClosedLoad,
    Framing,
    MailOptions,
    OpenLoad,
    Plan,
    RequestClass,
    Segment,
    Target,
    Think,
    TlsOptions,
    is_mail,
    is_postgres,
    uses_tls,
)
from caplab.engine.result import (
    ClassFigures,
    GeneratorFigures,
    IntervalSnapshot,
    LatencySummary,
    RunResult,
    TargetInterval,
    TargetSeries,
)
from caplab.units import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S

__all__ = [
    "DEFAULT_INTERVAL_S",
    "DEFAULT_RECONNECT_BACKOFF_MS",
    "DEFAULT_TIMEOUT_S",
    "ENGINE_VERSION",
    "MAIL_ACTIONS",
    "SECONDS_PER_HOUR",
    "Arrivals",
    "ClassFigures",
    "ClosedLoad",
    "Framing",
    "GeneratorFigures",
    "IntervalSnapshot",
    "LatencySummary",
    "LoadSpec",
    "MailOptions",
    "OpenLoad",
    "Plan",
    "PlanError",
    "RequestClass",
    "RunResult",
    "Segment",
    "Target",
    "TargetInterval",
    "TargetSeries",
    "TargetUnreachable",
    "Think",
    "TlsOptions",
    "UsageAction",
    "UsageProblem",
    "WorkerFailed",
    "build_plan",
    "is_mail",
    "is_postgres",
    "merge_histograms",
    "run",
    "summarize_histogram",
    "usage_classes",
    "usage_think_s",
    "uses_tls",
]
