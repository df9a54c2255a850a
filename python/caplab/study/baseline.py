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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from caplab.spec import StorageBaselineSpec

TOOL = "fio"
SLACK_S = 60.0
"""Beyond the timed runs: laying out the files and starting fio."""


def storage_baseline(
    spec: StorageBaselineSpec, directory: Path, prefix: Sequence[str] = ()
) -> dict[str, Any]:
    """``{"tool", "status": "measured"|"skipped"|"failed", "note", "directory", "jobs": […]}``,
    each job with iops, mb_s and lat_ms (mean, p50, p99 of completion latency). ``prefix`` runs fio
    inside a role's profile, whose cgroup is where a volume's throttle applies."""
    where = (directory / spec.directory).resolve()
    base: dict[str, Any] = {
        "tool": TOOL,
        "directory": str(where),
        "settings": {"block": spec.block, "jobs": spec.jobs, "depth": spec.depth, "size": spec.size},
        "jobs": [],
    }
    fio = shutil.which(TOOL)
    if fio is None:
        return {**base, "status": "skipped", "note": "fio is not installed (apt-get install fio)"}
    if not where.is_dir():
        return {**base, "status": "failed", "note": f"{where} is not a directory"}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="caplab-fio-", dir=where) as scratch:
        for rw in ("randread", "randwrite"):
            try:
                job, note = _run([*prefix, fio], rw, spec, Path(scratch))
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                return {**base, "status": "failed", "note": f"fio {rw}: {e}"}
            base["jobs"].append(job)
            if note:
                notes.append(note)
    return {**base, "status": "measured", "note": "; ".join(dict.fromkeys(notes)) or None}


def volume_baselines(
    spec: StorageBaselineSpec, volumes: dict[str, Path], prefixes: dict[str, list[str]]
) -> dict[str, dict[str, Any]]:
    """The baseline on each volume of a cell's profiles (``{"role/volume": baseline}``), fio run
    inside the role's profile: what that volume's class gives, to read the cell's per-volume disk
    use against ("log at 100 %, data under 5 %")."""
    here = spec.model_copy(update={"directory": "."})
    return {
        name: storage_baseline(here, path, prefixes.get(name.split("/", 1)[0], []))
        for name, path in volumes.items()
    }


def _run(
    fio: list[str], rw: str, spec: StorageBaselineSpec, scratch: Path
) -> tuple[dict[str, Any], str | None]:
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


def _job(name: str, rw: str, report: dict[str, Any]) -> dict[str, Any]:
    side = report["jobs"][0]["read" if rw == "randread" else "write"]
    clat = side.get("clat_ns") or side["lat_ns"]
    percentiles = clat.get("percentile") or {}

    def ms(ns: float | None) -> float | None:
        return ns / 1e6 if ns is not None else None

    return {
        "name": name,
        "iops": side["iops"],
        "mb_s": side["bw_bytes"] / 1e6,
        "lat_ms": {
            "mean": ms(clat.get("mean")),
            "p50": ms(percentiles.get("50.000000")),
            "p99": ms(percentiles.get("99.000000")),
        },
    }


def baseline_line(baseline: dict[str, Any], what: str = "storage baseline") -> str:
    """One line for the terminal: the figures, or why there are none."""
    if baseline["status"] != "measured":
        return f"{what} {baseline['status']}: {baseline['note']}"
    jobs = ", ".join(
        f"{j['name']} {j['iops']:,.0f} IOPS {j['mb_s']:.1f} MB/s p99 {j['lat_ms']['p99'] or 0:.2f} ms"
        for j in baseline["jobs"]
    )
    return f"{what}: {jobs}" + (f" ({baseline['note']})" if baseline["note"] else "")
