"""The load generators under comparison: how each is invoked, and how its output is read."""

import datetime
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent


@dataclass(frozen=True)
class ToolReport:
    """A generator's own account of its run, normalised so the tools can share one table."""

    completed: int
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    notes: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)


Parser = Callable[[str], ToolReport]


@dataclass(frozen=True)
class Tools:
    """Paths of the executables found on this machine; None means "skip it, with a note"."""

    nginx: str | None
    wrk: str | None
    oha: str | None
    caplab: str | None

    def executable(self, tool: str) -> str | None:
        found: str | None = getattr(self, tool)
        return found


def find_tools(caplab: str | None) -> Tools:
    """Look in PATH, plus where bench/install.sh and `make dev` put oha and caplab."""
    return Tools(
        nginx=shutil.which("nginx") or _existing("/usr/sbin/nginx"),
        wrk=shutil.which("wrk"),
        oha=_existing(str(BENCH_DIR / ".tools" / "bin" / "oha")) or shutil.which("oha"),
        caplab=_resolve_caplab(caplab),
    )


def _existing(path: str) -> str | None:
    return path if Path(path).is_file() else None


def _resolve_caplab(given: str | None) -> str | None:
    """An explicit --caplab must exist; otherwise prefer the repo's venv over PATH."""
    if given is not None:
        return shutil.which(given) or _existing(given)
    return _existing(str(REPO_DIR / ".venv" / "bin" / "caplab")) or shutil.which("caplab")


# --- commands ---------------------------------------------------------------------------------


def wrk_closed(wrk: str, url: str, users: int, duration_s: int, keep_alive: bool = True) -> list[str]:
    """--latency only adds the percentile table wrk keeps anyway; one thread like the others.
    wrk does not verify certificates; without keep-alive it reconnects after each reply."""
    close = [] if keep_alive else ["-H", "Connection: close"]
    return [wrk, "-t1", f"-c{users}", f"-d{duration_s}s", "--latency", *close, url]


def oha_closed(oha: str, url: str, users: int, duration_s: int, keep_alive: bool = True) -> list[str]:
    """--worker-threads 1 matches wrk -t1 and caplab --threads 1 (oha defaults to one per core)."""
    tls = ["--insecure"] if url.startswith("https://") else []
    close = [] if keep_alive else ["--disable-keepalive"]
    return [oha, "-z", f"{duration_s}s", "-c", str(users), *tls, *close, *_OHA_QUIET, url]


def oha_open(oha: str, url: str, rate: int, connections: int, duration_s: int) -> list[str]:
    """Open model in oha: -q paces the starts and --latency-correction measures from them."""
    pacing = ["-q", str(rate), "--latency-correction", "-c", str(connections)]
    return [oha, "-z", f"{duration_s}s", *pacing, *_OHA_QUIET, url]


_OHA_QUIET = ["--no-tui", "--output-format", "json", "--worker-threads", "1"]


def caplab_closed(
    caplab: str, url: str, users: int, duration_s: int, keep_alive: bool = True, resume: bool = True
) -> list[str]:
    """The bench's certificate is self-signed, hence --insecure for https://. New connections
    resume the server's session unless `resume` is False (a full handshake every time)."""
    tls = ["--insecure"] if url.startswith("https://") else []
    full = [] if resume or not tls else ["--no-tls-resume"]
    close = [] if keep_alive else ["-H", "Connection: close"]
    return [caplab, "load", url, "--users", str(users), *tls, *full, *close, *_caplab_common(duration_s)]


def caplab_open(caplab: str, url: str, rate: int, duration_s: int) -> list[str]:
    return [caplab, "load", url, "--rate", str(rate), *_caplab_common(duration_s)]


def _caplab_common(duration_s: int) -> list[str]:
    return ["--duration", f"{duration_s}s", "--threads", "1", "--json"]


# --- parsers ----------------------------------------------------------------------------------

_WRK_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(stdout: str) -> ToolReport:
    """wrk prints text: the request count, Requests/sec and (with --latency) a percentile table."""
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(\w+)", stdout, re.MULTILINE)
    rate = re.search(r"^Requests/sec:\s*([\d.]+)", stdout, re.MULTILINE)
    if total is None or rate is None:
        raise ValueError("no 'N requests in' / 'Requests/sec:' lines in wrk output")
    notes = [line.strip() for line in stdout.splitlines() if _is_wrk_error_line(line)]
    return ToolReport(
        completed=int(total.group(1)),
        rps=float(rate.group(1)),
        p50_ms=_wrk_percentile(stdout, "50"),
        p99_ms=_wrk_percentile(stdout, "99"),
        notes=tuple(notes),
    )


def _is_wrk_error_line(line: str) -> bool:
    return "Socket errors" in line or "Non-2xx" in line


def _wrk_percentile(stdout: str, pct: str) -> float | None:
    found = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s|m|h)\s*$", stdout, re.MULTILINE)
    return None if found is None else float(found.group(1)) * _WRK_UNITS_MS[found.group(2)]


def parse_oha(stdout: str) -> ToolReport:
    """oha's JSON: successes are the status-code counts; requests cut off by -z are errors."""
    data = json.loads(stdout)
    latency = data.get("metrics", {}).get("latency_ms", {})
    errors = data.get("errorDistribution", {})
    notes = [f"oha errors: {kind}: {count}" for kind, count in errors.items()]
    return ToolReport(
        completed=sum(data.get("statusCodeDistribution", {}).values()),
        rps=float(data["summary"]["requestsPerSec"]),
        p50_ms=latency.get("p50"),
        p99_ms=latency.get("p99"),
        notes=tuple(notes),
        raw=data,
    )


def parse_caplab(stdout: str) -> ToolReport:
    """caplab --json prints one object; latency_ms is measured from the intended start."""
    data = _last_json_object(stdout)
    latency = data.get("latency_ms") or {}
    return ToolReport(
        completed=int(data["completed"]),
        rps=float(data["throughput"]),
        p50_ms=latency.get("p50"),
        p99_ms=latency.get("p99"),
        notes=tuple(_caplab_notes(data)),
        raw=data,
    )


def _last_json_object(stdout: str) -> dict[str, Any]:
    """The whole stdout should be the object; tolerate stray lines before it, but say so."""
    text = stdout.strip()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        start = text.rfind("\n{")
        if start < 0:
            raise
        parsed = json.loads(text[start + 1 :])
        parsed.setdefault("_harness_note", "stdout had non-JSON lines before the object")
    if not isinstance(parsed, dict):
        raise ValueError(f"caplab --json printed a {type(parsed).__name__}, not an object")
    return parsed


def _caplab_notes(data: dict[str, Any]) -> list[str]:
    """The fields the tables have no column for but the comparison needs."""
    gen = data.get("generator") or {}
    service = data.get("service_time_ms") or {}
    notes = [
        f"offered_rate={data.get('offered_rate')} sent={data.get('sent')} "
        f"completed={data.get('completed')} errors={data.get('errors')} "
        f"dropped={data.get('dropped')} throughput={_num(data.get('throughput'))}",
        f"self-reported generator: cpu_s={_num(gen.get('cpu_s'))} "
        f"cpu_us_per_request={_num(gen.get('cpu_us_per_request'))} "
        f"saturated={gen.get('saturated')} reason={gen.get('saturation_reason')!r} "
        f"lateness_p99_ms={_num(gen.get('lateness_p99_ms'))} threads={gen.get('threads')}",
        f"service_time_ms p50={_num(service.get('p50'))} p99={_num(service.get('p99'))}",
    ]
    if gen.get("tls_handshakes") is not None:
        notes.append(
            f"TLS: handshakes={gen['tls_handshakes']} ({_num(gen.get('tls_handshakes_per_s'))}/s) "
            f"resumed={gen.get('tls_resumed')}"
        )
    if data.get("errors_by_kind"):
        notes.append(f"errors_by_kind={data['errors_by_kind']}")
    if "_harness_note" in data:
        notes.append(str(data["_harness_note"]))
    return notes


def _num(value: object) -> str:
    """Short numbers in notes; anything else (None, strings) as is."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


PARSERS: dict[str, Parser] = {"wrk": parse_wrk, "oha": parse_oha, "caplab": parse_caplab}


def caplab_engine_file(caplab: str) -> Path | None:
    """The compiled engine the caplab script loads, found with the script's own interpreter."""
    try:
        with open(caplab, "rb") as script:
            first = script.readline().decode(errors="replace")
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    probe = "import caplab._engine as e; print(e.__file__)"
    argv = [*first[2:].split(), "-c", probe]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(done.stdout.strip())
    return path if done.returncode == 0 and path.is_file() else None


def file_stamp(path: Path) -> str:
    """Identifies one build: a content hash, and when it was written."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    written = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
    return f"{path.name} sha256 {digest}…, built {written:%Y-%m-%d %H:%M:%S} UTC"
