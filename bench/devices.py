"""Device models' own cost: the daemon's CPU and timing at 1,000 and 20,000 random 4 KiB reads a
second, through the whole path (fio, ext4's loop device with direct I/O, FUSE, the daemon).

A ``throttle`` model releases requests evenly at its rate, so fio at a deep queue offers exactly
that rate when the path keeps up; an ``ssd`` model shows what the path carries at most. Needs
root, fio and fuse3; run as ``python bench/devices.py --out bench/RESULTS.md``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from caplab.profiles.device_models import DeviceModel, Ssd, Throttle
from caplab.profiles.devices import ModelDevice
from results_file import write_now

BENCH_DIR = Path(__file__).resolve().parent
GIB = 1 << 30
CASES: list[tuple[str, DeviceModel, int]] = [
    ("throttle, 1,000 IOPS", Throttle(size=GIB, read_iops=1000), 8),
    ("throttle, 20,000 IOPS", Throttle(size=GIB, read_iops=20_000), 64),
    ("ssd (the path's ceiling)", Ssd(size=GIB), 32),
]


@dataclass(frozen=True)
class Row:
    case: str
    depth: int
    iops: float
    daemon_cpu_pct: float
    late_mean_us: float
    late_max_us: float


def daemon_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(workdir: Path, case: str, model: DeviceModel, depth: int, seconds: int) -> Row:
    device = ModelDevice("bench", model, workdir)
    device.create()
    try:
        assert device.loop is not None and device.pid is not None
        cpu0, t0 = daemon_cpu_s(device.pid), time.monotonic()
        argv = ["fio", "--name=bench", f"--filename={device.loop}", "--rw=randread", "--bs=4k", "--direct=1"]
        argv += ["--ioengine=libaio", f"--iodepth={depth}", f"--runtime={seconds}", "--time_based"]
        done = subprocess.run([*argv, "--output-format=json"], capture_output=True, text=True, check=True)
        cpu1, t1 = daemon_cpu_s(device.pid), time.monotonic()
    finally:
        device.remove()
    iops = float(json.loads(done.stdout)["jobs"][0]["read"]["iops"])
    served = device.served
    return Row(
        case,
        depth,
        iops,
        100 * (cpu1 - cpu0) / (t1 - t0),
        float(served["late_mean_us"]),
        float(served["late_max_us"]),
    )


def table(rows: list[Row], seconds: int) -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "# Device models: the daemon's own cost",
        "",
        f"Produced by `python bench/devices.py` ({seconds} s of fio per row; nproc {os.cpu_count()};"
        f" load average after the runs {load}). fio: 4 KiB random reads, direct I/O, libaio, on the"
        " loop device over the served file; backing files in /dev/shm.",
        "",
        "| model | fio depth | fio IOPS | daemon CPU (% of a core) | answer lateness mean / max (µs) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case} | {r.depth} | {r.iops:,.0f} | {r.daemon_cpu_pct:.0f} |"
            f" {r.late_mean_us:,.0f} / {r.late_max_us:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="fio's run per model")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "RESULTS.md")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="caplab-bench-devices-", dir="/dev/shm"))
    try:
        rows = [measure(workdir, case, model, depth, args.seconds) for case, model, depth in CASES]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    text = table(rows, args.seconds)
    print(text)
    write_now(args.out, text, "bench/devices.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
