"""Benchmark caplab's PostgreSQL driver against pgbench on the same server and data (`make bench`).

A throwaway PostgreSQL (pgpair's server launch: initdb into a temporary directory, an ordinary
process on a free loopback port, durability off since the data dies with the run) is loaded with
`pgbench -i -s SCALE`; then for tpcb and select-only at 8 and 32 clients, pgbench -M prepared and
caplab's closed model run one after the other for the same time, the client pinned to one CPU and
the server to the other with taskset when both are available. Each run's transactions are also
counted by the server (the xact_commit delta of the database), an independent check of the tool's
own count.

Usage: python bench/pgbench.py [--caplab PATH] [--duration 10] [--scale 32] [--out bench/RESULTS.md]
The figures replace this script's own section of the output file (between its markers); the rest
of the file is kept. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from caplab.systems.pgpair.server import Server, ServerUser, bin_dir, free_port
from report import machine_facts, tool_version
from results_file import write_now

BENCH_DIR = Path(__file__).resolve().parent
CLIENT_CPU, SERVER_CPU = 0, 1
ROLE, DATABASE = "bench", "bench"
WORKLOADS = {"tpcb": [], "select-only": ["-S"]}
CLIENTS = (8, 32)


@dataclass(frozen=True)
class Figures:
    """One tool's run: transactions a second, mean latency, and the server's count beside the tool's."""

    tps: float
    latency_ms: float
    transactions: int
    server_commits: int


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--caplab", default=str(BENCH_DIR.parent / ".venv" / "bin" / "caplab"))
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--scale", type=int, default=32, help="pgbench scale (branches: ≥ the most clients)")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "RESULTS.md")
    return parser.parse_args(argv)


def pgbench_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        sys.exit("pgbench is not installed (postgresql-contrib)")
    return found[-1]


def pinning() -> tuple[list[str], list[str], str]:
    """taskset prefixes for the clients and the server, and what the section says about it."""
    if shutil.which("taskset") and {CLIENT_CPU, SERVER_CPU} <= os.sched_getaffinity(0):
        client = ["taskset", "-c", str(CLIENT_CPU)]
        return (
            client,
            ["taskset", "-a", "-cp", str(SERVER_CPU)],
            (
                f"clients on CPU {CLIENT_CPU}, the server on CPU {SERVER_CPU} via taskset; "
                "pgbench -j 1 and caplab --threads 1"
            ),
        )
    return [], [], "not pinned (taskset or two CPUs unavailable)"


def start_server(directory: Path, password: str) -> Server:
    """initdb and start as the unprivileged server user (PostgreSQL refuses root); the bench role
    owns the bench database."""
    user = ServerUser.for_servers()
    user.check_reachable(directory)
    server = Server("bench", directory / "data", free_port(), user, bin_dir())
    admin = secrets.token_urlsafe(24)
    server.initdb("postgres", admin)
    server.configure(
        {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "",
            "max_connections": 100,
            "shared_buffers": "256MB",
            "fsync": "off",
            "full_page_writes": "off",
            "synchronous_commit": "off",
        }
    )
    server.start()
    with psycopg.connect(
        host="127.0.0.1",
        port=server.port,
        user="postgres",
        password=admin,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(ROLE), sql.Literal(password))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(DATABASE), sql.Identifier(ROLE))
        )
    return server


def commits(port: int, password: str) -> int:
    with psycopg.connect(host="127.0.0.1", port=port, user=ROLE, password=password, dbname=DATABASE) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def printed(pattern: str, out: str) -> str:
    """The figure pgbench printed on the line ``pattern`` matches; exits naming it if absent."""
    found = re.search(pattern, out, re.M)
    if found is None:
        sys.exit(f"pgbench printed no line matching {pattern!r}:\n{out}")
    return found.group(1)


def run_pgbench(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    tps = float(printed(r"^tps = ([\d.]+)", out))
    latency = float(printed(r"^latency average = ([\d.]+) ms", out))
    done = int(printed(r"^number of transactions actually processed: (\d+)", out))
    return tps, latency, done


def run_caplab(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    if r["errors"]:
        sys.exit(f"caplab: {r['errors']} errors: {r['errors_by_kind']}")
    return float(r["throughput"]), float(r["latency_ms"]["mean"]), int(r["completed"])


def measured(argv: list[str], env: dict[str, str], port: int, password: str, tool: str) -> Figures:
    print(f"  {' '.join(argv)}", file=sys.stderr, flush=True)
    before = commits(port, password)
    tps, latency, done = (run_pgbench if tool == "pgbench" else run_caplab)(argv, env)
    # A backend's counts reach pg_stat_database when it exits: every client has exited by now.
    return Figures(tps, latency, done, commits(port, password) - before - 1)  # less the reading's own


def section(
    rows: list[tuple[str, int, Figures, Figures]], commands: list[str], facts: dict[str, str], scale: int
) -> str:
    server_version = tool_version([str(bin_dir() / "postgres"), "--version"])
    lines = [
        "## caplab against pgbench on one PostgreSQL",
        "",
        f"Produced by `python bench/pgbench.py`: one PostgreSQL, {server_version}, with fsync and"
        " synchronous_commit off (the figures are the clients' and the server's CPU, not a disk's),"
        f" loaded by `pgbench -i -s {scale}`; pgbench -M prepared and caplab's closed model run one after"
        " the other on the same data for the same time. pgbench sends a transaction's statements one"
        " at a time; caplab pipelines them in one round trip. Server commits: the database's"
        " `xact_commit` delta over the run (caplab's includes one commit per statement prepared on each"
        " connection).",
        "",
        "### Machine",
        "",
        *[f"- {k}: {v}" for k, v in facts.items()],
        "",
        "### Commands",
        "",
        "```",
        *commands,
        "```",
        "",
        "### Figures",
        "",
        "| workload | clients | pgbench TPS | caplab TPS | caplab / pgbench | pgbench mean ms "
        "| caplab mean ms | pgbench: transactions / server commits | caplab: transactions / server commits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, clients, pg, cap in rows:
        lines.append(
            f"| {workload} | {clients} | {pg.tps:,.0f} | {cap.tps:,.0f} | {cap.tps / pg.tps:.2f} "
            f"| {pg.latency_ms:.2f} | {cap.latency_ms:.2f} | {pg.transactions:,} / {pg.server_commits:,} "
            f"| {cap.transactions:,} / {cap.server_commits:,} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    client_pin, server_pin, pin = pinning()
    facts = machine_facts() | {"pinning": pin}  # the load average before the run
    directory = Path(tempfile.mkdtemp(prefix="caplab-bench-pg-"))
    directory.chmod(0o755)  # the server user enters it to reach its data directory
    password = secrets.token_urlsafe(24)
    server = start_server(directory, password)
    try:
        if server_pin and (pid := server.postmaster_pid()) is not None:
            subprocess.run([*server_pin, str(pid)], check=True, capture_output=True)  # backends inherit it
        env = dict(os.environ, PGPASSWORD=password)
        where = ["-h", "127.0.0.1", "-p", str(server.port), "-U", ROLE, DATABASE]
        url = f"postgresql://{ROLE}@127.0.0.1:{server.port}/{DATABASE}"
        print(f"pgbench -i -s {args.scale}", file=sys.stderr, flush=True)
        subprocess.run(
            [pgbench_bin(), "-i", "-s", str(args.scale), "-q", *where],
            env=env,
            check=True,
            capture_output=True,
        )
        jobs = ["-j", "1"] if client_pin else ["-j", "2"]
        threads = ["--threads", "1"] if client_pin else []
        rows, commands = [], [f"pgbench -i -s {args.scale} {' '.join(where)}"]
        for workload, flag in WORKLOADS.items():
            for clients in CLIENTS:
                pg_argv = [*client_pin, pgbench_bin(), *flag, "-M", "prepared", "-c", str(clients), *jobs]
                pg_argv += ["-T", str(args.duration), *where]
                cap_argv = [
                    *client_pin,
                    args.caplab,
                    "load",
                    url,
                    "--workload",
                    workload,
                    "--users",
                    str(clients),
                ]
                cap_argv += [*threads, "-d", f"{args.duration}s", "--json"]
                print(f"{workload}, {clients} clients", file=sys.stderr, flush=True)
                pg = measured(pg_argv, env, server.port, password, "pgbench")
                cap = measured(cap_argv, env, server.port, password, "caplab")
                rows.append((workload, clients, pg, cap))
                commands += [" ".join(pg_argv), " ".join(cap_argv)]
        generated = section(rows, commands, facts, args.scale)
        write_now(args.out, generated, "bench/pgbench.py")
        print(generated)
    finally:
        server.stop("immediate")
        server.wait_gone()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
