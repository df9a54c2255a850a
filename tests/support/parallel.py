"""Which tests may share the machine when the suite runs on two pytest-xdist workers, and which may
not: one table, applied at collection by tests/conftest.py and kept true by tests/test_parallel.py.

Why. Serially the suite's first pass took 54 minutes, on two workers 27
(``pytest -n 2 --dist loadgroup -m "not alone"``, then ``pytest -m alone`` on its own; ``make test``
runs both). A first try failed two ways, and the two tables below answer them:

1. **Fixed ports.** Tests that start a system on a fixed TCP port ran at once on both workers; the
   second found the port taken (a study's ready check refuses a port that already answers, so its
   cell fails). The built-in studies name fixed ports in their YAML, and the tests run those files
   as shipped (so does ``caplab demo``). PORT_BLOCKS lists each such set of ports with the tests
   that bind it. Blocks that share a port or a test become one ``xdist_group`` (a test marked with
   two groups would be a group of its own to xdist, and run beside both), and ``--dist loadgroup``
   runs a group's tests on one worker, one after another. A test that starts a system itself takes
   free ports instead (support/studies.py: ``free_port``, ``free_ports``) and needs no entry.

2. **Measuring the machine.** Tests that hold the engine's send schedule, a CPU per request, a rate
   or a round trip to a tight bound fail when the other worker takes a core or the disk. ALONE lists
   them with the reason; they are marked ``alone``, which the parallel pass leaves out and a serial
   pass runs. Most other tests measure something too, with a looser bound: one that fails beside
   the other worker is run again alone by ``make py-test`` before the verdict.

3. **Costly shared fixtures.** A session fixture is built once per worker that uses it: the report
   tests' two studies would run twice. SHARED_BLOCKS keeps their users on one worker, as a port
   block does.

An entry is a path under tests/ (every test of that file) or ``path::test_name`` (every
parametrisation of that test). A file is the safer entry: a test renamed in it stays covered.

The groups reach xdist's scheduler by ``scheduler`` below, not (only) by the ``xdist_group`` mark:
pytest-xdist 3.8 tells its controller a test's group by writing ``@group`` into the test's node id,
and pytest 9.2's structured node ids ignore that write, so ``--dist loadgroup`` alone silently
schedules every test on its own (pytest-xdist issue 1386).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
"""The tests/ directory: entries and keys are paths relative to it."""


@dataclass(frozen=True)
class Block:
    """Tests that run one after another on one worker: they bind the same fixed ports (a system
    and every test that starts it on them), or share a session fixture too dear to build once on
    each worker."""

    name: str
    """Part of the group's name: the system and its first port, or the fixture."""
    ports: tuple[int, ...]
    where: str
    """Where the numbers are fixed (a study file, a system's or a library's default), or what the
    fixture costs."""
    tests: tuple[str, ...]


PORT_BLOCKS: tuple[Block, ...] = (
    Block(
        "msgbus-7400",
        (7400, 7401, 7402, 7403, 7410),
        "biztalk-scaleout/quick.yaml, run by `caplab demo --quick` (msgbus's own defaults, too)",
        ("test_demo.py",),
    ),
    Block(
        "pgpair-7600",
        (7600, 7601, 7610, 7611, 7620, 7621, 7630, 7631, 7640, 7641, 7650, 7651, 7660, 7661),
        "pg-failover/quick.yaml, availability-groups/quick.yaml, hl7-hardware/mirroring.yaml; the "
        "observer's own client connects to both. 7610-7631: availability-groups/pgha.yaml, ttl.yaml "
        "and partition.yaml (pgha's nodes, Patroni's REST APIs, etcd), 7640-7661: its study.yaml, in "
        "the folder the availability-groups test copies; pgha.yaml's and partition.yaml's own tests "
        "run them on free ports",
        (
            "study/test_study_failover.py",
            "study/test_study_availability_groups.py",
            "study/test_study_failover_observer.py",
            "study/test_study_hl7.py",  # its mirroring test: mirroring.yaml puts the queue in pgpair
        ),
    ),
    Block(
        "hl7-7860",
        (7850, 7860, 7861, 7862, 7863, 7870),
        "hl7-hardware/quick.yaml and mirroring.yaml: the queue's PostgreSQL, four channels, metrics",
        ("study/test_study_hl7.py",),
    ),
    Block(
        "idsync-3890",
        (3890,),
        "miis-disk/quick.yaml (idsync's directory default)",
        ("study/test_study_miis.py",),
    ),
    Block(
        "mail-2587",
        (2587, 2993),
        "role-consolidation/quick.yaml: submission and the proxy's IMAPS",
        ("study/test_study_role_consolidation.py",),
    ),
    Block(
        "ray-local",
        (52365,),
        "a local Ray's dashboard agent (Ray's default, not ours: a second local Ray retries, then "
        "runs without it); two local Rays would also share the 2 cores with some 20 processes each",
        ("cluster/test_cluster_agents.py", "cluster/test_cluster_cli.py", "cluster/test_cluster_study.py"),
    ),
)

SHARED_BLOCKS: tuple[Block, ...] = (
    Block(
        "report-built",
        (),
        "the session fixtures `built`, `study_document` and `study_samples` (tests/report/conftest.py): "
        "two studies run with `caplab run`, 50-80 s; on two workers each would run them",
        (
            "report/test_results_types.py",
            "report/test_report_chromium.py",
            "report/test_results_json.py",
            "report/test_report_files.py",
            "report/test_report_cli.py",
            "report/test_report_validated.py",
            "report/test_report_variants.py",
            "report/test_report_junit.py",
            "report/test_report_compare.py",
            "report/test_report_findings.py",
            "report/test_report_methodology.py",
            "report/test_report_publish.py",
        ),
    ),
)

BLOCKS: tuple[Block, ...] = PORT_BLOCKS + SHARED_BLOCKS


ALONE: dict[str, str] = {
    "test_engine.py::test_open_model_keeps_the_offered_rate": (
        "2,000/s held within 2 % with the generator not saturated and its busiest thread under 1.5"
    ),
    "test_engine.py::test_poisson_arrivals_reach_the_server_exponentially_spaced": (
        "the ~2 ms gaps between sends, as received, tested for an exponential's CV and by KS: a few "
        "ms of jitter from a taken core distorts them"
    ),
    "test_engine.py::test_constant_arrivals_reach_the_server_evenly_spaced": (
        "the gaps' mean within 2 % of the schedule and their CV under 0.5"
    ),
    "experiments/test_capacity_shared_with_nginx.py": (
        "the search takes both cores on purpose (the generator against a server cheaper than it); "
        "another test beside it would be part of the host it fills"
    ),
    "experiments/test_capacity_end_to_end.py": (
        "known answers: capacity within 0.70-1.05 of 1 / the server's CPU per request, 0.80-1 of "
        "1 / its sleep, 3-6 users; server and generator pinned to cores of their own"
    ),
    "experiments/test_capacity_users.py": (
        "the known answer 150 users at cpu<=75 % within 10 %, the CPU per request within 20 %"
    ),
    "collect/test_collect_roles.py::test_match_never_finds_caplab_itself": (
        "matches the test process's own command line, which the other worker shares word for word"
    ),
    "study/test_study_profiles.py::test_a_server_across_a_far_link_is_bound_by_its_round_trips": (
        "capacity within 100/s and 4 connections / 5 ms, each round trip delayed by the link-delay "
        "daemon on the host's CPU"
    ),
    "collect/test_collect_roles.py::test_role_cpu_matches_a_known_cost_per_request": (
        "a role's CPU within 3 points of a core of a known cost per request plus an overhead "
        "measured in a run before"
    ),
    "collect/test_collect_node_exporter.py::test_a_remote_host_reads_as_the_local_collector_reads_it": (
        "two collectors' readings of this machine in neighbouring windows: CPU within 5 points, "
        "memory within 2 %"
    ),
    "profiles/test_cpu.py::test_a_burner_under_half_a_cpu_uses_half_a_cpu": (
        "CPU per quota period within 0.45-0.55"
    ),
    "profiles/test_cpu.py::test_a_share_below_the_kernels_floor_gets_a_longer_period_not_more_cpu": (
        "CPU per quota period within 0.055-0.07"
    ),
    (
        "profiles/test_volumes.py::"
        "test_fio_on_an_hdd_volume_measures_its_iops_and_an_unthrottled_volume_far_more"
    ): ("fio's IOPS within 180-220 on a 200 IOPS volume, and far more unthrottled, on the shared disk"),
    "profiles/test_volumes.py::test_fsync_and_writeback_are_held_to_the_volume_bandwidth": (
        "fsync and writeback within 6.8-9.2 MiB/s of an 8 MiB/s volume"
    ),
    "profiles/test_links.py::test_a_bulk_transfer_runs_at_the_link_rate": (
        "94-100 Mbit/s through a 100mbit link, 5 times that through 1gbit, from Python on both ends"
    ),
    "profiles/test_links.py::test_a_link_reports_its_round_trip_time": (
        "the probe's round trip within 0.5 ms of the kernel's smoothed RTT"
    ),
    "profiles/test_links.py::test_a_link_with_an_added_round_trip_delays_every_exchange_by_it": (
        "4.0-5.5 ms for a 4 ms delay that a user-space process applies to each packet"
    ),
    "cluster/test_cluster_agents.py::test_two_agents_at_1000_each_carry_2000_and_merge_exactly": (
        "2,000/s within 2 % on two agents, and their p50 within 1.5 times a single run's"
    ),
    "experiments/test_capacity_trial.py::test_a_trial_within_the_slo_passes_with_its_details": (
        "a trial at 200/s passes with the generator on time: beside a neighbour, the host at 93 % "
        "made its sends 40 ms late and caplab (rightly) failed it as machine-saturated"
    ),
    "study/test_study_job.py::test_a_phase_counts_its_items_by_the_systems_own_counter": (
        "a phase's rate within 5 % of its known 100/s, read from the system's counter"
    ),
    "test_load_cli.py::test_steps_become_a_staircase_of_rates": (
        "each step's rate within 3/s of its schedule, stepped on a timer"
    ),
    "test_load_postgres.py::test_caplab_and_pgbench_measure_the_same_select_only_server_alike": (
        "caplab's and pgbench's transactions per second in neighbouring windows, compared as a ratio"
    ),
    "study/test_study_job.py::test_a_phase_of_known_work_is_reported_at_its_rate": (
        "a `sleep` phase's rate within 2 %: its wall time includes starting the shell"
    ),
    "study/test_study_job.py::test_a_job_study_recommends_the_cheapest_configuration_by_a_phase_rate": (
        "`sleep` phases' rates within 2 %, as above"
    ),
    "test_demo.py": (
        "each processing host brings its own core: two hosts carry at least twice one host's "
        "capacity, and beside the other worker they carried 203/s against 137.5/s"
    ),
    "study/test_study_availability_groups.py": (
        "every database's probes see the fault: beside the other worker some databases' probes were "
        "late enough that no interval held a failed one"
    ),
    "study/test_study_compare.py": (
        "the known answer 400 µs against 200 µs per request, a ratio of about a half: beside the other "
        "worker the two studies' searches met different neighbours and it read 0.35"
    ),
    "study/test_study_until.py": (
        "the quiet server's replicates must agree within the interval `until` asks for: beside the "
        "other worker its searches spread as widely as the noisy server's"
    ),
    "study/test_study_miis.py": (
        "the cells' limits are the system's: beside the other worker caplab's generator was 96 % busy "
        "and (rightly) named itself the synchronisation's limit"
    ),
}


def alone_files() -> list[str]:
    """The files that hold the serial pass's tests, as paths from the repository's root: ``make
    py-test`` collects only these with ``-m alone`` (collecting the whole suite to deselect all but
    some 40 of its 1,400 tests took 8-10 s), and ``-m alone`` still picks the tests in them."""
    return sorted({"tests/" + entry.partition("::")[0] for entry in ALONE})


def key_of(path: Path, nodeid: str) -> str | None:
    """A collected test's key: its file relative to tests/ and the rest of its node id
    (``study/test_study_hl7.py::test_x``); None for a test outside tests/."""
    try:
        relative = path.resolve().relative_to(TESTS)
    except ValueError:
        return None
    _, sep, rest = nodeid.partition("::")
    return relative.as_posix() + sep + rest


def covers(entry: str, key: str) -> bool:
    """Whether ``entry`` (a file, or a test in it) names the test ``key`` (any parametrisation)."""
    return key == entry or key.startswith((entry + "::", entry + "["))


def _overlap(a: str, b: str) -> bool:
    return covers(a, b) or covers(b, a)


@functools.cache
def groups() -> dict[str, str]:
    """Each port block's group name: blocks that share a port, or name a test in common, are
    joined (transitively) under the names of all of them, sorted and joined by ``+``."""
    parent = {b.name: b.name for b in BLOCKS}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for i, a in enumerate(BLOCKS):
        for b in BLOCKS[i + 1 :]:
            shared_test = any(_overlap(x, y) for x in a.tests for y in b.tests)
            if set(a.ports) & set(b.ports) or shared_test:
                parent[root(b.name)] = root(a.name)
    members: dict[str, list[str]] = {}
    for b in BLOCKS:
        members.setdefault(root(b.name), []).append(b.name)
    return {b.name: "+".join(sorted(members[root(b.name)])) for b in BLOCKS}


def group_of(key: str) -> str | None:
    """The xdist group of the test ``key``, or None when it binds no fixed port."""
    for block in BLOCKS:
        if any(covers(entry, key) for entry in block.tests):
            return groups()[block.name]
    return None


def alone_because(key: str) -> str | None:
    """Why the test ``key`` must have the machine to itself, or None when it need not."""
    return next((why for entry, why in ALONE.items() if covers(entry, key)), None)


def stale_entries() -> list[str]:
    """Entries whose file no longer exists, or whose test is not defined in it: a renamed test
    would otherwise fall out of its group, or out of the serial pass, without a word."""
    entries = [e for b in BLOCKS for e in b.tests] + list(ALONE)
    return [entry for entry in entries if not _exists(entry)]


def _exists(entry: str) -> bool:
    file, _, test = entry.partition("::")
    path = TESTS / file
    if not path.is_file():
        return False
    return (
        not test or re.search(rf"^\s*(async\s+)?def {re.escape(test)}\(", path.read_text(), re.M) is not None
    )


def scheduler(config: pytest.Config, log: object) -> Any:
    """xdist's ``loadgroup`` scheduler, each test's group read from its node id through the table
    above (the controller sees node ids only); an ``@group`` suffix, where xdist manages to write
    one, is honoured first. Imports xdist: called only by xdist's own hook."""
    from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

    rootpath = config.rootpath

    class TableGroups(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            return scope if scope != nodeid else group_of_nodeid(rootpath, nodeid) or nodeid

    return TableGroups(config, log)


def group_of_nodeid(rootpath: Path, nodeid: str) -> str | None:
    """The group of the test with node id ``nodeid`` (relative to ``rootpath``), or None."""
    key = key_of(rootpath / nodeid.partition("::")[0], nodeid)
    return group_of(key) if key is not None else None


if __name__ == "__main__":  # the Makefile's list of the serial pass's files
    print(" ".join(alone_files()))
