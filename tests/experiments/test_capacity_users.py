"""The user model's known answer: a usage profile against a knownserver that burns a fixed CPU time per
request. Each user does one action a second (900 sends and 2,700 reads an hour, so 3600 / 3,600 = 1
s of exponential think), each costing 5 ms of the server's one thread, so the most users at
``cpu[server]<=75%`` is 0.75 / (0.005 s × 1/s) = 150 — with the server's own handling of each
request (its CPU per request, counted from outside) a little fewer. Replies of a few ms against a
second of think keep the think-time approximation within a few per cent. The response SLO (the
paper's "acceptable response", loose enough never to bind on a quiet machine) keeps a server starved
of its core by other processes — its CPU share low, its users slowed — from passing. Users start
together, so the warm-up covers a few think times before anything is measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.runs import SearchRun, find_capacity

pytestmark = pytest.mark.slow

COST_S = 0.005
SENDS_PER_HOUR, READS_PER_HOUR = 900.0, 2700.0
ACTIONS_PER_USER_S = (SENDS_PER_HOUR + READS_PER_HOUR) / 3600.0
CPU_CEILING = 0.75

PROFILE = f"""\
actions:
  send: {{per_hour: {SENDS_PER_HOUR:g}, method: POST, path: /send, body: "message {{seq}}", template: true}}
  read: {{per_day: {READS_PER_HOUR * 24:g}, path: /inbox}}
"""


@pytest.fixture(scope="module")
def users_search(caplab_path: Path, tmp_path_factory: pytest.TempPathFactory) -> SearchRun:
    usage = tmp_path_factory.mktemp("usage") / "profile.yaml"
    usage.write_text(PROFILE)
    return find_capacity(
        ["--cpu-us", f"{COST_S * 1e6:g}"],
        [
            "--usage",
            str(usage),
            "--slo",
            f"cpu[server]<={CPU_CEILING:.0%}",
            "--slo",
            "p99<=250ms",
            # Near the answer, and bounded by the assertion's own band: the expected users are at
            # most 0.75 / (0.005 s × 1/s) = 150 (the cost asserted is 5 ms or more), so no answer
            # above 1.10 × 150 = 165 passes the assertion; a search whose trial at 165 passes stops
            # there ("the SLO still holds at the maximum"), found is false and the test fails.
            # 128 / 165 then bisect to 146 and 137 (about 141 expected here: 5.3 ms a request),
            # within 8 %, where 96 / 192 took four bisections: two 5.5 s trials fewer. A slower
            # server fails at 128 and the bracket halves down to it.
            "--start",
            "128",
            "--max",
            "165",
            "--precision",
            "8%",
            "--trial",
            "2.5s",
            "--confirm",
            "3s",
            "--warmup",
            "3s",
            "--repeats",
            "2",
        ],
    )


def test_max_users_at_75_percent_cpu_is_the_known_answer(users_search: SearchRun) -> None:
    doc = users_search.doc
    assert users_search.returncode == 0, users_search.stderr[-2000:]
    assert doc["model"] == "closed" and doc["found"] is True
    # The cost is the burn plus the server's own handling of each request, from its CPU counters
    # over the whole search (5.25 ms once: 143 users, not the bare burn's 150).
    cost_s = users_search.cpu_ms_per_request / 1000.0
    assert COST_S <= cost_s <= 1.2 * COST_S, cost_s
    expected = CPU_CEILING / (cost_s * ACTIONS_PER_USER_S)
    assert doc["capacity_users"] == pytest.approx(expected, rel=0.10), (doc["capacity_users"], expected)


def test_the_answer_gives_each_action_and_the_rate_per_user(users_search: SearchRun) -> None:
    doc = users_search.doc
    per_user = doc["per_user"]
    assert per_user["offered_per_s"] == pytest.approx(ACTIONS_PER_USER_S)
    # Replies of a few ms against 1 s of think: users act nearly as often as the profile says.
    assert per_user["achieved_per_s"] == pytest.approx(ACTIONS_PER_USER_S, rel=0.10)
    actions = {a["name"]: a for a in doc["actions"]}
    assert set(actions) == {"send", "read"}
    assert all(a["errors"] == 0 and a["p99_ms"] is not None for a in actions.values())
    share = actions["send"]["per_s"] / (actions["send"]["per_s"] + actions["read"]["per_s"])
    assert share == pytest.approx(SENDS_PER_HOUR / (SENDS_PER_HOUR + READS_PER_HOUR), abs=0.05)
