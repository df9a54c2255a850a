"""The storage baseline: what the disks under the system do on their own, measured with fio before
the cells run (the BizTalk paper's SQLIO run: 8 KB random reads and writes, 8 threads, queue depth
8). A store-bound result can then be read against what the storage can give.

Measured in a scratch directory inside the one named (so on the same file system as the system's
data) and removed afterwards. Without fio the baseline is skipped with a note, never an error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from caplab.json_types import JsonDict, JsonObject, items, member, number
from caplab.spec import StorageBaselineSpec

TOOL = "fio"
SLACK_S = 60.0
"""Beyond the timed runs: laying out the files and starting fio."""


@dataclass(frozen=True)
class FioJob:
    """One fio job group's figures: its IOPS, bandwidth and completion latency (mean, p50, p99)."""

    name: str
    iops: float
    mb_s: float
    lat_mean_ms: float | None
    lat_p50_ms: float | None
    lat_p99_ms: float | None

    def to_json(self) -> JsonDict:
        latency = {"mean": self.lat_mean_ms, "p50": self.lat_p50_ms, "p99": self.lat_p99_ms}
        return {"name": self.name, "iops": self.iops, "mb_s": self.mb_s, "lat_ms": latency}


@dataclass(frozen=True)
class StorageBaseline:
    """What fio measured in one directory, or why it measured nothing (``status`` is ``measured``,
    ``skipped`` or ``failed``; ``note`` says why, or what was measured instead)."""

    directory: str
    settings: JsonObject
    status: str
    note: str | None
    jobs: tuple[FioJob, ...] = ()
    tool: str = TOOL

    def to_json(self) -> JsonDict:
        """The stored form, in the environment's ``storage_baseline`` and a cell's hardware."""
        return {
            "tool": self.tool,
            "directory": self.directory,
            "settings": dict(self.settings),
            "jobs": [j.to_json() for j in self.jobs],
            "status": self.status,
            "note": self.note,
        }


def storage_baseline(spec: StorageBaselineSpec, directory: Path, prefix: Sequence[str] = ()) -> JsonDict:
    """``{"tool", "status": "measured"|"skipped"|"failed", "note", "directory", "jobs": […]}``,
    each job with iops, mb_s and lat_ms (mean, p50, p99 of completion latency): the stored form of
    ``measure_storage``."""
    return measure_storage(spec, directory, prefix).to_json()


def measure_storage(
    spec: StorageBaselineSpec, directory: Path, prefix: Sequence[str] = ()
) -> StorageBaseline:
    """fio's random reads then random writes in a scratch directory under ``directory``. ``prefix``
    runs fio inside a role's profile, whose cgroup is where a volume's throttle applies."""
    where = (directory / spec.directory).resolve()
    settings = {"block": spec.block, "jobs": spec.jobs, "depth": spec.depth, "size": spec.size}
    base = StorageBaseline(str(where), settings, status="measured", note=None)
    fio = shutil.which(TOOL)
    if fio is None:
        return replace(base, status="skipped", note="fio is not installed (apt-get install fio)")
    if not where.is_dir():
        return replace(base, status="failed", note=f"{where} is not a directory")
    notes: list[str] = []
    jobs: list[FioJob] = []
    with tempfile.TemporaryDirectory(prefix="caplab-fio-", dir=where) as scratch:
        for rw in ("randread", "randwrite"):
            try:
                job, note = _run([*prefix, fio], rw, spec, Path(scratch))
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                return replace(base, status="failed", note=f"fio {rw}: {e}", jobs=tuple(jobs))
            jobs.append(job)
            if note:
                notes.append(note)
    return replace(base, note="; ".join(dict.fromkeys(notes)) or None, jobs=tuple(jobs))


def volume_baselines(
    spec: StorageBaselineSpec, volumes: dict[str, Path], prefixes: dict[str, list[str]]
) -> dict[str, JsonDict]:
    """The baseline on each volume of a cell's profiles (``{"role/volume": baseline}``), fio run
    inside the role's profile: what that volume's class gives, to read the cell's per-volume disk
    use against ("log at 100 %, data under 5 %")."""
    here = spec.model_copy(update={"directory": "."})
    return {
        name: storage_baseline(here, path, prefixes.get(name.split("/", 1)[0], []))
        for name, path in volumes.items()
    }


def _run(fio: list[str], rw: str, spec: StorageBaselineSpec, scratch: Path) -> tuple[FioJob, str | None]:
    """One fio job group; direct IO first, buffered when the file system refuses O_DIRECT (tmpfs)."""
    name = f"{rw}-{spec.block}"
    for direct in (1, 0):
        cmd = [
            *fio,
            "--output-format=json",
            f"--directory={scratch}",
            f"--name={name}",
            f"--rw={rw}",
            f"--bs={spec.block}",
            f"--numjobs={spec.jobs}",
            f"--iodepth={spec.depth}",
            "--ioengine=libaio",
            f"--direct={direct}",
            f"--size={spec.size}",
            f"--runtime={spec.runtime:g}",
            "--time_based",
            "--group_reporting",
        ]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=spec.runtime + SLACK_S, check=False
        )
        if done.returncode == 0:
            note = None if direct else "the file system refused direct IO: buffered IO was measured"
            return _job(name, rw, json.loads(done.stdout)), note
        last_error = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    raise ValueError(f"exited {done.returncode}: {last_error[0]}")


def _job(name: str, rw: str, report: JsonObject) -> FioJob:
    """fio's JSON report of one job group: its read or its write side."""
    groups = items(report, "jobs")
    if not groups or not isinstance(groups[0], Mapping):
        raise ValueError("fio reported no job")
    side = member(groups[0], "read" if rw == "randread" else "write")
    clat = member(side, "clat_ns") or member(side, "lat_ns")
    percentiles = member(clat, "percentile")
    iops, bandwidth = number(side, "iops"), number(side, "bw_bytes")
    if iops is None or bandwidth is None:
        raise ValueError(f"fio reported no {rw} figures")

    def ms(ns: float | None) -> float | None:
        return ns / 1e6 if ns is not None else None

    return FioJob(
        name,
        iops,
        bandwidth / 1e6,
        ms(number(clat, "mean")),
        ms(number(percentiles, "50.000000")),
        ms(number(percentiles, "99.000000")),
    )


def baseline_line(baseline: JsonObject, what: str = "storage baseline") -> str:
    """One line for the terminal: the figures, or why there are none."""
    note = baseline.get("note")
    if baseline.get("status") != "measured":
        return f"{what} {baseline.get('status')}: {note}"
    jobs = ", ".join(_job_words(j) for j in items(baseline, "jobs") if isinstance(j, Mapping))
    return f"{what}: {jobs}" + (f" ({note})" if note else "")


def _job_words(job: JsonObject) -> str:
    p99 = number(member(job, "lat_ms"), "p99")
    iops, mb_s = number(job, "iops") or 0, number(job, "mb_s") or 0
    return f"{job.get('name')} {iops:,.0f} IOPS {mb_s:.1f} MB/s p99 {p99 or 0:.2f} ms"
