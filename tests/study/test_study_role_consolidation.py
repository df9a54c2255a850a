"""The built-in role-consolidation study's quick cut (seed 003's test 2a), end to end on the real
mail system: Postfix (transport) and a Dovecot IMAP proxy (access) in front of a Dovecot backend
(mailbox), started by the study as ordinary processes, driven by users who send over SMTP
submission and read over IMAPS. Access and transport each on a 2-core profile, then together on a
4-core one: the most users each placement carries (the max-users table), each action and the
actions per user at capacity, the consolidation table (the sum of the single-role servers against
the combined server, for CPU and memory, the paper's figures beside), and the recommendation.

Measured on the 2-core test host (`caplab run quick.yaml`, 73 s, a fresh SMTP session per send):
apart 40 users (24 actions/s, limit cpu:transport at 52 % of its quota, the next step, 60, over
75 %), together 30 (19/s, software: nothing near its quota, 40 not steady). Three-second trials
and a 50 % search place these within a step or two: the test checks what the run shows, not the
figures."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from caplab import studies
from caplab.profiles import Profile
from support.mail import missing_mail_packages
from support.require import MAIL, require, require_profiles
from support.studies import run_study

pytestmark = pytest.mark.slow  # two user searches on a real mail system


def test_the_quick_role_consolidation_study_sizes_users_and_compares_placements(shared_dir: Path) -> None:
    require(MAIL, missing_mail_packages())
    require_profiles(Profile.build("probe", cpus=1, memory="64M"))
    path = studies.prepare("role-consolidation", shared_dir) / "quick.yaml"
    results = run_study(path, shared_dir)
    report = (shared_dir / "r" / "report.md").read_text()
    cells = {c["factors"]["placement"]: c for c in results["cells"]}
    assert set(cells) == {"apart", "together"}

    # The max-users table: each placement's users at capacity, as searched.
    users = {}
    for placement, cell in cells.items():
        cap = cell["metrics"]["capacity"]
        assert cell["status"] == "complete" and cap["found"] and cap["unit"] == "users", cap
        users[placement] = cap["value"]
        assert users[placement] > 0, cell["search"]["trials"]
        assert f"{users[placement]:,} users" in report
        # The usage profile at capacity: sends and reads each completed, per user no more than was
        # offered beyond the Poisson spread of a few seconds' count (three standard deviations).
        actions = {a["name"]: a for a in cap["actions"]}
        assert set(actions) == {"send", "read"} and all(a["completed"] > 0 for a in actions.values())
        assert cap["per_user"]["offered_per_hour"] == 640 + 1600
        spread = 3 / math.sqrt(sum(a["completed"] for a in actions.values()))
        assert 0 < cap["per_user"]["achieved_per_hour"] <= (640 + 1600) * (1 + spread), cap["per_user"]
    assert "Actions at capacity" in report and "Actions per user" in report

    # The consolidation table: predicted is the single-role servers' sum, against the combined server.
    [entry] = results["consolidation"]
    comparisons = {c["resource"]: c for c in entry["comparisons"]}
    assert set(comparisons) == {"CPU", "memory"}
    for c in comparisons.values():
        assert c["predicted"] > 0 and c["actual"] > 0
        assert c["ratio"] == pytest.approx(c["actual"] / c["predicted"])
        assert c["verdict"] in ("additive", "sub-additive", "super-additive")
    apart = cells["apart"]["resources"]
    assert apart["transport"]["quota_cpus"] == apart["access"]["quota_cpus"] == 0.25, "2 cores × 0.125"
    assert cells["together"]["resources"]["transport"]["quota_cpus"] == 0.5, "one 4-core server for both"
    assert "Consolidation: single-role servers against one combined server" in report
    # The paper's figures beside ours, labelled as its hardware.
    paper = entry["paper"]
    assert (paper["configuration"], paper["cpu_predicted"], paper["memory_actual"]) == ("4c-8g", 53, 5069)
    assert "paper: predicted (its hardware)" in report and "the paper's hardware" in report

    # The recommendation names the placement that carried the most, with its users.
    best = max(users, key=lambda p: users[p])
    text = results["recommendation"]["text"]
    assert f"placement={best}" in text and f"{users[best]:,} users" in text
    # Every SLO was judged, the combined server's CPU as a whole among them.
    confirm = [t for t in cells["together"]["search"]["trials"] if t["phase"] == "confirm"]
    assert confirm and confirm[-1]["passed"] and confirm[-1]["load"] == users["together"]
    assert "cpu[transport+access]<=75%" in cells["together"]["metrics"]["capacity"]["slo"]
    assert re.search(r"\| placement=together \| (send|read) \|", report)
