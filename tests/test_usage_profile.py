"""Usage profiles: actions with rates per user-hour (or day) become the engine's closed model —
exponential think of 3600 s / the rates' sum, a mix weighted by the rates — in a study's
``load.usage`` and in ``caplab load --usage FILE``; a profile whose rates sum to nothing, or one
mixed with a rate or a think time, is refused naming the file, the line and the field."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from caplab.engine import ClosedLoad, LoadSpec, Think, UsageAction, UsageProblem, build_plan, run
from caplab.experiments.alongside import run_alongside
from caplab.spec import SpecError, load_study, load_usage
from caplab.study.load import plan_for
from support.servers import KnownServer, served_requests

STUDY = """\
name: mail-users
target:
  http:
    url: http://127.0.0.1:8080/
load:
  users: 300
  usage:
    actions:
      send: {per_day: 48, method: POST, path: /send, body_file: message.eml}
      read: {per_hour: 10, path: /inbox}
      poll: {per_hour: "{poll}"}
factors:
  poll: [0, 14]
"""


def test_a_studys_usage_profile_becomes_users_think_time_and_a_weighted_mix(tmp_path: Path) -> None:
    (tmp_path / "message.eml").write_text("Subject: hi\r\n\r\nhello\r\n")
    (tmp_path / "study.yaml").write_text(STUDY)
    quiet, busy = (plan_for(c.config, tmp_path) for c in load_study(tmp_path / "study.yaml").cells)
    # 48 a day is 2 an hour: 2 + 10 actions per user-hour, one every 300 s; 2 + 10 + 14 → 138.5 s.
    assert quiet.load == ClosedLoad(300, Think("exponential", 300.0))
    assert isinstance(busy.load, ClosedLoad) and busy.load.think.mean_s == pytest.approx(3600 / 26)
    assert [(r.name, r.weight, r.method, r.path) for r in quiet.requests] == [
        ("send", 2.0, "POST", "/send"),
        ("read", 10.0, "GET", "/inbox"),
    ], "an action at rate 0 is left out of the mix"
    assert quiet.requests[0].body == "Subject: hi\r\n\r\nhello\r\n"
    assert [r.name for r in busy.requests] == ["send", "read", "poll"]


def test_users_log_on_within_the_warm_up_when_asked(tmp_path: Path) -> None:
    """``logon:`` puts each user's first action (the session it keeps: TLS, a mail login) inside the
    warm-up, so the window measures sessions in use; without it users start in their steady state."""
    (tmp_path / "message.eml").write_text("Subject: hi\r\n\r\nhello\r\n")
    (tmp_path / "study.yaml").write_text(
        STUDY.replace("  users: 300\n", "  users: 300\n  warmup: 20s\n  logon: 15s\n")
    )
    warmed = plan_for(load_study(tmp_path / "study.yaml").cells[0].config, tmp_path)
    assert isinstance(warmed.load, ClosedLoad) and warmed.load.logon_s == 15.0
    assert '"logon_s": 15.0' in warmed.to_json()
    (tmp_path / "study.yaml").write_text(STUDY)
    cold = plan_for(load_study(tmp_path / "study.yaml").cells[0].config, tmp_path)
    assert isinstance(cold.load, ClosedLoad) and cold.load.logon_s == 0.0
    assert "logon_s" not in cold.to_json()
    (tmp_path / "study.yaml").write_text(
        STUDY.replace("  users: 300\n", "  users: 300\n  warmup: 5s\n  logon: 15s\n")
    )
    with pytest.raises(SpecError) as caught:
        load_study(tmp_path / "study.yaml")
    assert "load: logon: must fall within the warm-up" in str(caught.value)
    with pytest.raises(UsageProblem, match="--logon must fall within the warm-up"):
        build_plan(LoadSpec(url="http://127.0.0.1:9/", users=3, logon_s=5.0))
    with pytest.raises(UsageProblem, match="--logon applies to the closed model"):
        build_plan(LoadSpec(url="http://127.0.0.1:9/", rate=3, logon_s=5.0, warmup_s=5.0))


@pytest.mark.parametrize(
    ("load", "line", "expected"),
    [
        (
            "  users: 5\n  usage:\n    actions:\n      send: {per_hour: 0}\n      read: {per_day: 0}\n",
            8,
            "load.usage.actions: the rates sum to nothing",
        ),
        ("  users: 5\n  usage:\n    actions:\n      send: {per_huor: 3}\n", 9, "did you mean per_hour?"),
        ("  users: 5\n  usage:\n    actions:\n      send: {per_hour: 3, per_day: 1}\n", 9, "one of them"),
        ("  rate: 5\n  usage:\n    actions:\n      send: {per_hour: 3}\n", 5, "the closed model takes users"),
        ("  think: 1s\n  usage:\n    actions:\n      send: {per_hour: 3}\n", 5, "sets their think time"),
    ],
)
def test_a_bad_usage_profile_in_a_study_names_its_line(
    tmp_path: Path, load: str, line: int, expected: str
) -> None:
    path = tmp_path / "study.yaml"
    path.write_text("name: x\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\nload:\n" + load)
    with pytest.raises(SpecError) as e:
        load_study(path)
    assert str(e.value).startswith(f"{path}:{line}: ") and expected in str(e.value), str(e.value)


def test_a_usage_profile_brings_its_own_requests(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: x\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\n    method: POST\n"
        "load:\n  usage:\n    actions: {read: {per_hour: 3}}\nsearch: {slo: ['cpu<=75%']}\n"
    )
    with pytest.raises(SpecError, match=r"study.yaml:7: load.usage: each action gives its own request"):
        load_study(path)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (LoadSpec(url="http://h/", rate=10.0), "give --users, not --rate"),
        (LoadSpec(url="http://h/", users=3, think_s=1.0), "sets the think time itself"),
        (LoadSpec(url="http://h/"), "needs the number of users"),
        (LoadSpec(url="http://h/", users=3, body="x"), "each action gives its own body"),
    ],
)
def test_a_usage_profile_refuses_what_it_sets_itself(spec: LoadSpec, message: str) -> None:
    with pytest.raises(UsageProblem, match=message):
        build_plan(replace(spec, usage=(UsageAction("read", 60.0),)))


def test_caplab_load_refuses_a_profile_that_sums_to_nothing_with_exit_2(
    caplab_cmd: list[str], closed_port: int, tmp_path: Path
) -> None:
    profile = tmp_path / "users.yaml"
    profile.write_text("actions:\n  send: {per_hour: 0}\n")
    done = subprocess.run(
        [*caplab_cmd, "load", f"http://127.0.0.1:{closed_port}/", "--users", "5", "--usage", str(profile)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{profile}:1: actions: the rates sum to nothing" in done.stderr


def test_a_usage_file_is_read_with_its_rates_per_hour(tmp_path: Path) -> None:
    profile = tmp_path / "users.yaml"
    profile.write_text("actions:\n  send: {per_day: 24, method: POST}\n  read: {per_hour: 4}\n")
    usage = load_usage(profile)
    assert usage.actions_per_hour == 5.0
    assert usage.actions["send"].rate_per_hour == 1.0


def test_a_mail_targets_actions_take_its_one_method() -> None:
    actions = (UsageAction("send-small", 30.0), UsageAction("send-large", 6.0, method="send"))
    plan = build_plan(LoadSpec(url="smtp://127.0.0.1:2525", users=20, usage=actions))
    assert [(r.name, r.method) for r in plan.requests] == [("send-small", "SEND"), ("send-large", "SEND")]
    with pytest.raises(UsageProblem, match="method is READ, not POST"):
        build_plan(LoadSpec(url="imap://127.0.0.1:1143", users=2, usage=(UsageAction("r", 1.0, "POST"),)))


MAIL = """\
name: mail
target:
  mail:
    smtp: smtp://127.0.0.1:2587
    imap: imaps://127.0.0.1:2993
    password_file: passwords
    mailboxes: 20
    message_size: 50K
    insecure: true
load:
  users: 40
  usage:
    actions:
"""


def test_a_mail_targets_usage_profile_drives_the_protocol_its_actions_name(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        MAIL + "      send: {per_hour: 12, target: smtp}\n      read: {per_hour: 0, target: imap}\n"
    )
    plan = plan_for(load_study(path).cells[0].config, tmp_path)
    assert plan.target.url == "smtp://127.0.0.1:2587", "an action at rate 0 takes no part"
    assert [(r.name, r.method) for r in plan.requests] == [("send", "SEND")]
    assert plan.mail is not None and plan.mail.mailboxes == 20 and plan.mail.message_bytes == 50 * 1024
    assert plan.mail.password_file == str(tmp_path / "passwords")
    assert plan.tls is not None and plan.tls.insecure


def test_sends_and_reads_become_one_plan_per_protocol_run_side_by_side(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(
        MAIL + "      send: {per_hour: 12, target: smtp}\n      read: {per_hour: 36, target: imap}\n"
    )
    plan = plan_for(load_study(path).cells[0].config, tmp_path)
    [reads] = plan.alongside
    # Each action is its own Poisson stream per user: 40 users sending every 300 s on average,
    # and the same 40 users reading every 100 s.
    assert (plan.target.url, plan.load) == (
        "smtp://127.0.0.1:2587",
        ClosedLoad(40, Think("exponential", 300.0)),
    )
    assert (reads.target.url, reads.load) == (
        "imaps://127.0.0.1:2993",
        ClosedLoad(40, Think("exponential", 100.0)),
    )
    assert [r.method for r in (*plan.requests, *reads.requests)] == ["SEND", "READ"]
    assert reads.seed != plan.seed and "alongside" not in plan.to_json()


def test_an_unnamed_action_on_a_mail_target_of_two_protocols_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(MAIL + "      send: {per_hour: 12}\n")
    with pytest.raises(SpecError, match=r"study.yaml:12: load.usage: action send: name its target"):
        load_study(path)


@pytest.mark.slow
def test_two_targets_run_side_by_side_as_one_result(known_server: KnownServer) -> None:
    sends, reads = known_server(), known_server()
    actions = (
        UsageAction("send", 3600.0, "POST", target=f"http://{sends.address}/"),
        UsageAction("read", 7200.0, target=f"http://{reads.address}/"),
    )
    spec = LoadSpec(url=f"http://{sends.address}/", users=10, usage=actions, duration_s=2.0, warmup_s=0.5)
    result = run_alongside(build_plan(spec), lambda _: None, run)
    assert result.users == 10, "the same users do both actions"
    by_name = {c.name: c for c in result.classes}
    assert set(by_name) == {"send", "read"}
    assert served_requests(sends) >= by_name["send"].completed > 0
    assert served_requests(reads) >= by_name["read"].completed > by_name["send"].completed
    assert result.completed == sum(c.completed for c in result.classes)
