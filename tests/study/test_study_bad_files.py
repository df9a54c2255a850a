"""`caplab run` on a bad study file: exit 2, the `file:line: field: message` on stderr, no
traceback, and nothing written to the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.store import Store
from support.studies import caplab, free_port

TARGET = "name: orders\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            TARGET + "load:\n  rate: 100\n  duraton: 5s\n",
            "7: load.duraton: unknown field (did you mean duration?)",
            id="unknown-field",
        ),
        pytest.param(
            TARGET.replace("    url", "     url") + "    method: GET\nload:\n  rate: 1\n",
            "5: YAML syntax error: ",
            id="yaml-syntax",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 100\n  repeat: twice\n",
            "7: load.repeat: Input should be a valid integer",
            id="wrong-type",
        ),
        pytest.param(
            "name: orders\nload:\n  rate: 100\n", "1: target: required field is missing", id="no-target"
        ),
        pytest.param(
            TARGET + "factors:\n  rate: [10, 20]\nload:\n  rate: '{rat}'\n",
            "8: load.rate: ",
            id="unknown-factor",
        ),
        pytest.param(
            TARGET + "sut:\n  metrics:\n    url: http://127.0.0.1:9/metrics\n    rates: {done: 'bad name'}\n"
            "load:\n  rate: 1\n",
            "8: sut.metrics.rates.done: String should match pattern",
            id="metrics-series-name",
        ),
        pytest.param(
            TARGET + "sut:\n  metrics:\n    url: http://127.0.0.1:9/metrics\nload:\n  rate: 1\n",
            "6: sut.metrics: name at least one series under rates: or gauges:",
            id="metrics-nothing-named",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\ngoal:\n  rate: 500\n  headroom: 120%\n",
            "9: goal.headroom: Input should be less than 1",
            id="goal-headroom",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\ngoal:\n  users: 500\n",
            "8: goal.users: the study's load is a rate (open model): give goal.rate",
            id="goal-users-of-a-rate",
        ),
        pytest.param(
            TARGET + "load:\n  users: 10\ngoal:\n  users: 500\n  rate: 20\n",
            "7: goal: a goal is a rate or a number of users, not both",
            id="goal-users-and-rate",
        ),
        pytest.param(
            TARGET
            + "factors:\n  hosts: [1, 2]\nload:\n  rate: 1\ngoal:\n  rate: 500\n  for_each: [hosts, flow]\n",
            "11: goal.for_each: 'flow' is not a factor (the factors: hosts)",
            id="goal-for-each",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\nsearch: {}\nreplicates: {min: 5, max: 3, until: 5%}\n",
            "8: replicates: min (5) is more than max (3)",
            id="replicates-min-over-max",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\nreplicates: {until: 5%}\n",
            "7: replicates.until: the interval it waits for is a searched capacity's",
            id="replicates-until-without-search",
        ),
        pytest.param(TARGET + "load:\n  rate: 1\norder: shuffled\n", "7: order: Input should be", id="order"),
        pytest.param(
            TARGET + "load:\n  rate: 1\nslo: ['app[processed]>=many']\n",
            "7: slo.0: ",
            id="app-slo",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\njob:\n  phases:\n    - {name: a, run: 'true'}\n",
            "1: (top level): a job: study sends no requests: leave out target and load:",
            id="job-and-load",
        ),
        pytest.param(
            "name: j\njob:\n  phases:\n    - {name: a, items: 5}\n",
            "4: job.phases.0.run: required field is missing",
            id="phase-without-run",
        ),
        pytest.param(
            "name: j\nprofiles:\n  small: {cpus: 1}\ncost:\n  profiles: {large: 100}\n"
            "sut:\n  roles:\n    w: {match: worker, profile: small}\n"
            "job:\n  phases:\n    - {name: a, run: 'true'}\n",
            "5: cost.profiles.large: prices profile 'large', which the study does not define (small)",
            id="cost-unknown-profile",
        ),
        pytest.param(  # no sut: the prices are checked all the same
            "name: j\nprofiles:\n  small: {cpus: 1}\ncost:\n  profiles: {large: 100}\n"
            "job:\n  phases:\n    - {name: a, run: 'true'}\n",
            "5: cost.profiles.large: prices profile 'large', which the study does not define (small)",
            id="cost-unknown-profile-without-sut",
        ),
        pytest.param(
            "name: j\njob:\n  phases:\n    - {name: a, run: 'true'}\ngoal: {phase: b, rate: 3}\n",
            "5: goal.phase: 'b' is not a phase of the job (the job's phases: a)",
            id="goal-phase-unknown",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\n  duration: 5s\nactions:\n  - {at: 2s, do: switchover}\n",
            "9: actions.0.do: the system has no action 'switchover' (its actions: none: declare them "
            "under sut.actions)",
            id="action-undeclared",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\n  duration: 5s\nactions:\n  - at: 9s\n    run: 'true'\n",
            "9: actions.0.at: 9s is after the load ends (5s with its warm-up)",
            id="action-after-the-end",
        ),
        pytest.param(
            TARGET + "load:\n  rate: 1\nactions:\n  - {at: 1s, run: 'true', do: x}\n",
            "8: actions.0: give do: (one of the system's actions) or run: (a command)",
            id="action-do-and-run",
        ),
        pytest.param(
            TARGET
            + "load:\n  duration: 5s\nsearch: {slo: ['p99<=1s']}\nactions:\n  - {at: 1s, run: 'true'}\n",
            "9: actions.0.at: actions run during a fixed load, not a search",
            id="action-in-a-search",
        ),
        pytest.param(
            "name: ag\nfactors:\n  n: [20, 0]\ntarget:\n  postgres:\n"
            "    url: postgresql://u@127.0.0.1:9/ag_{i}\n    databases: {count: '{n}', share: 10%}\n"
            "load:\n  rate: 1\n",
            "7: target.postgres.databases: matches no database (10% of 0): the load needs at least one",
            id="database-list-of-none",
        ),
        pytest.param(
            TARGET
            + "factors:\n  workers: [1, 2]\nload:\n  rate: 1\nfindings:\n  - claim: more workers, more\n"
            "    compare: {metric: capacity, cells: {workers: 3}, over: {workers: 1}, ratio: '>1'}\n",
            "11: findings.0.compare.cells.workers: 3 is not a value of workers (1, 2)",
            id="finding-of-no-cell",
        ),
    ],
)
@pytest.mark.slow
def test_a_bad_study_exits_2_with_file_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "study.yaml").write_text(text)
    db = tmp_path / "caplab.db"
    done = caplab("run", "study.yaml", "--db", f"sqlite:///{db}", cwd=tmp_path, timeout=30)
    assert done.returncode == 2, done.stderr
    # The file is named as the user gave it.
    assert done.stderr.startswith(f"caplab: study.yaml:{expected}")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not db.exists()


def test_a_missing_study_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    done = caplab("run", path, "--db", f"sqlite:///{tmp_path / 'caplab.db'}", timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip() == f"caplab: {path}: cannot read: No such file or directory"


def test_a_report_directory_and_no_report_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "caplab.db"
    done = caplab("run", tmp_path / "s.yaml", "--db", f"sqlite:///{db}", "-o", tmp_path / "r", "--no-report")
    assert done.returncode == 2
    assert "--no-report" in done.stderr and "Traceback" not in done.stderr
    assert not db.exists(), "refused before anything ran"


@pytest.mark.parametrize(
    "role", ["host: {match: server.py}", "server: {match: '  '}"], ids=["reserved", "blank"]
)
@pytest.mark.slow
def test_a_role_the_collectors_refuse_is_reported_without_a_traceback(tmp_path: Path, role: str) -> None:
    port = free_port()
    text = (
        f"name: roles\ntarget:\n  http:\n    url: http://127.0.0.1:{port}/\n"
        f"sut:\n  roles:\n    {role}\nload:\n  rate: 10\n  duration: 1s\n"
    )
    path = tmp_path / "study.yaml"
    path.write_text(text)
    db_url = f"sqlite:///{tmp_path / 'caplab.db'}"
    done = caplab("run", path, "--db", db_url, timeout=30)
    assert "Traceback" not in done.stderr
    assert done.returncode in (1, 2)
    assert "sut.roles" in done.stderr or "role" in done.stderr
    if (tmp_path / "caplab.db").exists():
        with Store(db_url) as store:
            assert all(s.status != "running" for s in store.list_studies())
