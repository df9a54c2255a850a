"""The table that lets the suite run on two pytest-xdist workers (support/parallel.py) stays true:
every entry names a test that exists, every fixed port of a built-in study belongs to one group,
every test that runs a built-in study is in the group of its ports, and collection applies the
marks (``-m alone`` selects the tests of the serial pass)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

from support import parallel

STUDIES = Path(str(resources.files("caplab.studies")))
FIXED_PORT = re.compile(r"--[\w-]*port[ =](\d+)|\bport: (\d+)|(?:127\.0\.0\.1|\{[\w.]+\}):(\d+)")
"""A port a study file fixes: ``--port 7600``, ``ready: {port: 7601}``, ``127.0.0.1:7860``,
``{address.db}:7850``."""
RUNS_A_STUDY = re.compile(r"""studies\.prepare\(\s*["']([\w-]+)["']""")
RUNS_THE_DEMO = re.compile(r"""["']demo["'],\s*["']--quick["']""")
DEMO_FOLDER = "biztalk-scaleout"
"""What `caplab demo` runs."""


def ports_in(path: Path) -> set[int]:
    return {int(next(g for g in m.groups() if g)) for m in FIXED_PORT.finditer(path.read_text())}


def group_ports() -> dict[str, set[int]]:
    ports: dict[str, set[int]] = {}
    for block in parallel.PORT_BLOCKS:
        ports.setdefault(parallel.groups()[block.name], set()).update(block.ports)
    return ports


def test_every_entry_names_a_test_that_exists() -> None:
    assert parallel.stale_entries() == [], "renamed or removed: update tests/support/parallel.py"


def test_each_built_in_study_files_fixed_ports_are_all_in_one_group() -> None:
    by_group = group_ports()
    for path in sorted(STUDIES.glob("*/*.yaml")):
        ports = ports_in(path)
        holding = [g for g, held in by_group.items() if ports <= held]
        assert not ports or holding, f"{path.parent.name}/{path.name}: ports {sorted(ports)} not in one group"


def test_a_test_that_runs_a_built_in_study_is_in_the_group_of_its_ports() -> None:
    by_group = group_ports()
    for path in sorted(parallel.TESTS.rglob("test_*.py")):
        text = path.read_text()
        folders = set(RUNS_A_STUDY.findall(text))
        if RUNS_THE_DEMO.search(text):
            folders.add(DEMO_FOLDER)
        key = path.relative_to(parallel.TESTS).as_posix() + "::any_test"
        for folder in folders:
            ports = set().union(*(ports_in(f) for f in (STUDIES / folder).glob("*.yaml")))
            group = parallel.group_of(key)
            assert group is not None and ports <= by_group[group], (key, folder, group, sorted(ports))


def test_blocks_that_share_a_test_are_one_group_and_others_are_not() -> None:
    hl7 = parallel.group_of("study/test_study_hl7.py::test_the_mirroring_part")
    assert hl7 == parallel.group_of("study/test_study_failover.py::test_a_switchover[x]")
    assert hl7 == "hl7-7860+pgpair-7600"
    assert parallel.group_of("test_demo.py::test_the_demo_says_where_its_report_is") == "msgbus-7400"
    assert parallel.group_of("study/test_study_hl7_other.py::test_x") is None, "a file is not a prefix"
    assert parallel.group_of("test_engine.py::test_open_model_keeps_the_offered_rate") is None


def test_the_scheduler_reads_a_tests_group_from_its_node_id() -> None:
    """What xdist's controller sees of a test is its node id, relative to the rootdir."""
    root = parallel.TESTS.parent
    assert parallel.group_of_nodeid(root, "tests/study/test_study_miis.py::test_x") == "idsync-3890"
    assert parallel.group_of_nodeid(root, "tests/test_units.py::test_format_duration[1s]") is None


def test_an_entry_covers_every_parametrisation_of_its_test_and_no_other_test() -> None:
    entry = "test_engine.py::test_poisson_arrivals_reach_the_server_exponentially_spaced"
    assert parallel.covers(entry, entry + "[2]")
    assert not parallel.covers(entry, entry + "_too")
    assert parallel.alone_because("experiments/test_capacity_users.py::test_anything") is not None


def test_collection_marks_the_serial_pass() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "alone", "-p", "no:cacheprovider",
         str(parallel.TESTS / "test_engine.py")],
        capture_output=True, text=True, timeout=120, check=False, cwd=parallel.TESTS.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = sorted(line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line)
    assert collected == [
        "test_constant_arrivals_reach_the_server_evenly_spaced",
        "test_open_model_keeps_the_offered_rate",
        "test_poisson_arrivals_reach_the_server_exponentially_spaced[1]",
        "test_poisson_arrivals_reach_the_server_exponentially_spaced[2]",
    ]


REPORT_FIXTURES = re.compile(r"[(,]\s*(built|study_document|study_samples)\s*[:),]")
"""A test or fixture asking for one of tests/report/conftest.py's session fixtures."""


def test_every_test_file_using_the_reports_shared_studies_is_in_their_block() -> None:
    users = [
        path.relative_to(parallel.TESTS).as_posix()
        for path in sorted(parallel.TESTS.rglob("test_*.py"))
        if REPORT_FIXTURES.search(path.read_text())
    ]
    assert "report/test_report_chromium.py" in users  # the pattern finds a known user
    assert {u: parallel.group_of(u + "::any_test") for u in users} == dict.fromkeys(users, "report-built")


def test_the_serial_pass_collects_the_files_of_every_alone_entry() -> None:
    """``make py-test`` collects only these files for the serial pass (support/parallel.py run as a
    script prints them): a file missing here would drop its alone tests from both passes."""
    done = subprocess.run(
        [sys.executable, str(parallel.TESTS / "support" / "parallel.py")],
        capture_output=True, text=True, timeout=60, check=True, cwd=parallel.TESTS.parent,
    )  # fmt: skip
    files = done.stdout.split()
    assert files == sorted(set(files)) and "tests/test_engine.py" in files
    for entry in parallel.ALONE:
        assert "tests/" + entry.partition("::")[0] in files, entry
    assert all((parallel.TESTS.parent / f).is_file() for f in files)
    assert "$(ALONE_FILES)" in (parallel.TESTS.parent / "Makefile").read_text()
