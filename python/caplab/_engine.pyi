"""Type stub for the compiled load engine (engine/src/python.rs)."""

from collections.abc import Callable

__all__ = [
    "PlanError",
    "TargetUnreachable",
    "WorkerFailed",
    "__version__",
    "delay_link",
    "merge_histograms",
    "run_plan",
    "serve_device",
    "simulate_device",
    "summarize_histogram",
]

__version__: str

class PlanError(ValueError):
    """The run plan is invalid; the message names the field."""

class TargetUnreachable(ConnectionError):
    """Nothing answers at the target address."""

class WorkerFailed(RuntimeError):
    """A load-generating thread failed (the message says why); the run's counts are incomplete."""

def run_plan(plan_json: str, on_interval: Callable[[str], bool | None] | None = None) -> str: ...
def merge_histograms(encoded: list[str]) -> str: ...
def summarize_histogram(encoded: str) -> str: ...
def delay_link(queue_num: int, delay_us: int, on_ready: Callable[[], object]) -> None: ...
def serve_device(mountpoint: str, backing: str, model_json: str, on_ready: Callable[[], object]) -> str: ...
def simulate_device(model_json: str, workload_json: str, seconds: float) -> float: ...
