"""The mail system on real Postfix and Dovecot: every message accepted over SMTP (250 after DATA)
is a file in its recipient's Maildir and is fetched over IMAP through the access proxy with the
user's password; wrong passwords are refused; the content checks and the recipient table reject
what they should; the roles are three disjoint process trees."""

from __future__ import annotations

import email
import imaplib
import poplib
import shutil
import smtplib
import ssl
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import psutil
import pytest

from caplab.collect.base import ResourceSample
from caplab.collect.roles import RoleCollector, RoleSpec
from caplab.systems.mail import MailSystem, Settings
from caplab.systems.mail.content import SIGNATURE
from caplab.systems.mail.users import read_passwords

StartMail = Callable[..., tuple[MailSystem, dict[str, Any]]]
USERS = 4
MESSAGES = 24

pytestmark = pytest.mark.usefixtures("mail_packages")


@pytest.fixture
def start_mail() -> Iterator[StartMail]:
    """``start_mail(users=N, **settings)``: a running system in a temporary directory every user
    may enter (its servers run as caplab-mail); stopped and deleted at teardown."""
    made: list[tuple[Path, MailSystem]] = []

    def start(users: int, **settings: Any) -> tuple[MailSystem, dict[str, Any]]:
        directory = Path(tempfile.mkdtemp(prefix="caplab-test-mail-"))
        directory.chmod(0o755)
        system = MailSystem(directory / "work")
        made.append((directory, system))
        return system, system.start(Settings(directory / "work", users=users, **settings))

    yield start
    for directory, system in made:
        system.stop()
        shutil.rmtree(directory, ignore_errors=True)


def insecure() -> ssl.SSLContext:
    """The system's certificate is self-signed: the tests use TLS without verifying it."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def message(to: str, subject: str, body: str = "hello\n" * 50) -> EmailMessage:
    m = EmailMessage()
    m["From"] = "sender@caplab.test"
    m["To"] = to
    m["Subject"] = subject
    m.set_content(body)
    return m


def wait_delivered(system: MailSystem, total: int, timeout_s: float = 60.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        delivered = system.delivered()
        if sum(delivered.values()) >= total:
            return delivered
        time.sleep(0.1)
    return system.delivered()


def subjects_over_imap(client: imaplib.IMAP4, user: str, password: str) -> list[str]:
    client.login(user, password)
    kind, data = client.select("INBOX", readonly=True)
    assert kind == "OK"
    found = []
    if int(data[0] or 0):
        kind, fetched = client.fetch("1:*", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
        assert kind == "OK"
        for part in fetched:
            if isinstance(part, tuple):
                found.append(str(email.message_from_bytes(part[1])["Subject"]))
    client.logout()
    return sorted(found)


@pytest.mark.slow
def test_every_accepted_message_is_in_its_recipients_maildir_and_read_through_the_proxy(
    start_mail: StartMail,
) -> None:
    system, status = start_mail(users=USERS)
    ports = status["ports"]
    sent: dict[str, list[str]] = {f"user{i}": [] for i in range(1, USERS + 1)}
    with smtplib.SMTP("127.0.0.1", ports["smtp"], timeout=30) as smtp:
        for n in range(MESSAGES):
            user = f"user{n % USERS + 1}"
            code, _ = smtp.mail("sender@caplab.test")
            assert code == 250
            assert smtp.rcpt(f"{user}@caplab.test")[0] == 250
            code, _ = smtp.data(message(f"{user}@caplab.test", f"message {n}").as_bytes())
            if code == 250:  # accepted after DATA: it must arrive
                sent[user].append(f"message {n}")
    assert sum(len(s) for s in sent.values()) == MESSAGES
    delivered = wait_delivered(system, MESSAGES)
    assert delivered == {user: len(subjects) for user, subjects in sent.items()}
    assert system.status()["messages_delivered"] == MESSAGES
    passwords = read_passwords(system.passwords_file)
    for user, subjects in sent.items():
        plain = imaplib.IMAP4("127.0.0.1", ports["proxy"])
        assert subjects_over_imap(plain, user, passwords[user]) == sorted(subjects)
    over_tls = imaplib.IMAP4_SSL("127.0.0.1", ports["proxy_imaps"], ssl_context=insecure())
    assert subjects_over_imap(over_tls, "user1@caplab.test", passwords["user1"]) == sorted(sent["user1"])
    pop3 = poplib.POP3("127.0.0.1", ports["proxy_pop3"], timeout=30)
    pop3.user("user2")
    pop3.pass_(passwords["user2"])
    assert pop3.stat()[0] == len(sent["user2"])
    pop3.quit()


@pytest.mark.slow
def test_submission_and_smtps_deliver_for_an_authenticated_user_only(start_mail: StartMail) -> None:
    system, status = start_mail(users=2)
    ports = status["ports"]
    passwords = read_passwords(system.passwords_file)
    with smtplib.SMTP("127.0.0.1", ports["submission"], timeout=30) as smtp:
        smtp.starttls(context=insecure())
        smtp.login("user1", passwords["user1"])
        smtp.send_message(message("user2@caplab.test", "over submission"))
    with smtplib.SMTP_SSL("127.0.0.1", ports["smtps"], context=insecure(), timeout=30) as smtp:
        smtp.login("user1@caplab.test", passwords["user1"])
        smtp.send_message(message("user2@caplab.test", "over smtps"))
    with smtplib.SMTP("127.0.0.1", ports["submission"], timeout=30) as smtp:
        smtp.starttls(context=insecure())
        with pytest.raises(smtplib.SMTPRecipientsRefused):  # no AUTH: submission relays nothing
            smtp.send_message(message("user2@caplab.test", "anonymous"))
    assert wait_delivered(system, 2)["user2"] == 2


@pytest.mark.slow
def test_a_wrong_password_is_refused_as_an_authentication_failure(start_mail: StartMail) -> None:
    system, status = start_mail(users=2)
    ports = status["ports"]
    with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):
        imaplib.IMAP4("127.0.0.1", ports["proxy"]).login("user1", "not-the-password")
    pop3 = poplib.POP3("127.0.0.1", ports["proxy_pop3"], timeout=30)
    pop3.user("user1")
    with pytest.raises(poplib.error_proto, match="Authentication failed"):
        pop3.pass_("not-the-password")
    with smtplib.SMTP("127.0.0.1", ports["submission"], timeout=30) as smtp:
        smtp.starttls(context=insecure())
        with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
            smtp.login("user1", "not-the-password")
        assert refused.value.smtp_code == 535
    right = read_passwords(system.passwords_file)["user1"]
    with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):  # no such user
        imaplib.IMAP4("127.0.0.1", ports["proxy"]).login("user9", right)


@pytest.mark.slow
def test_content_checks_and_the_recipient_table_reject_at_smtp_time(start_mail: StartMail) -> None:
    system, status = start_mail(users=2)
    with smtplib.SMTP("127.0.0.1", status["ports"]["smtp"], timeout=30) as smtp:
        smtp.mail("sender@caplab.test")
        smtp.rcpt("user1@caplab.test")
        code, reply = smtp.data(message("user1@caplab.test", "infected", f"x\n{SIGNATURE}\ny\n").as_bytes())
        assert (code, reply) == (550, b"5.7.1 rejected by content check")
        with pytest.raises(smtplib.SMTPRecipientsRefused, match="User unknown"):
            smtp.send_message(message("nobody@caplab.test", "to no one"))
        smtp.send_message(message("user1@caplab.test", "clean"))
    assert wait_delivered(system, 1) == {"user1": 1, "user2": 0}


@pytest.mark.slow
def test_the_three_roles_are_disjoint_process_trees_each_named_by_its_match(start_mail: StartMail) -> None:
    _, status = start_mail(users=1)
    pids = {role: set(found["pids"]) for role, found in status["roles"].items()}
    assert set(pids) == {"transport", "access", "mailbox"}
    assert all(pids.values())
    assert not (pids["transport"] & pids["access"] or pids["access"] & pids["mailbox"])
    masters = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"]]
    for role, found in status["roles"].items():
        matching = {p.pid for p in masters if found["match"] in " ".join(p.info["cmdline"])}
        assert matching == {min(pids[role], key=lambda pid: psutil.Process(pid).create_time())}, role
    assert Counter(psutil.Process(p).username() for p in pids["mailbox"]) == Counter(
        {"caplab-mail": len(pids["mailbox"])}
    )
    assert (Path(status["passwords_file"]).stat().st_mode & 0o777) == 0o600


@pytest.mark.slow
def test_a_studys_role_matchers_put_sending_on_transport_and_reading_on_access(start_mail: StartMail) -> None:
    """The ``match`` each role reports, given to caplab's role collector: the processes it finds
    are that role's, and the CPU of SMTP sends lands on transport while IMAP reads through the
    proxy land on access (and mailbox), not on transport. The reads fetch whole messages over TLS:
    terminating it is the access role's work, and a proxied plain login that fetches subjects moves
    too few bytes to be sure of one CPU tick (the kernel's accounting unit, 10 ms) on access."""
    system, status = start_mail(users=2)
    ports = status["ports"]
    collectors = {
        role: RoleCollector(RoleSpec(role, match=found["match"])) for role, found in status["roles"].items()
    }
    for collector in collectors.values():
        collector.start()
    with smtplib.SMTP("127.0.0.1", ports["smtp"], timeout=30) as smtp:
        for n in range(20):
            smtp.send_message(message("user1@caplab.test", f"m{n}", "a line of a message body\n" * 2000))
    wait_delivered(system, 20)
    sent = {role: _cpu(c.sample(0.0)) for role, c in collectors.items()}
    assert collectors["transport"].pids >= set(system.role_pids()["transport"])
    assert not collectors["transport"].pids & (collectors["access"].pids | collectors["mailbox"].pids)
    password = read_passwords(system.passwords_file)["user1"]
    for _ in range(20):
        over_tls = imaplib.IMAP4_SSL("127.0.0.1", ports["proxy_imaps"], ssl_context=insecure())
        over_tls.login("user1", password)
        over_tls.select("INBOX", readonly=True)
        kind, fetched = over_tls.fetch("1:*", "(BODY.PEEK[])")
        over_tls.logout()
        assert kind == "OK" and sum(isinstance(part, tuple) for part in fetched) == 20
    read = {role: _cpu(c.sample(0.0)) for role, c in collectors.items()}
    assert sent["transport"] > 0 and sent["transport"] > sent["access"]
    assert read["access"] > 0 and read["mailbox"] > 0 and read["access"] > read["transport"]


def _cpu(samples: list[ResourceSample]) -> float:
    return next(s.value for s in samples if s.metric == "cpu_percent")


@pytest.mark.slow
def test_max_connections_is_how_many_sessions_each_role_holds_at_once(start_mail: StartMail) -> None:
    """120 IMAP sessions held logged in through the proxy, each a backend imap process, and 120
    SMTP sessions, each an smtpd: past Postfix's and Dovecot's own limit of 100 per service. With
    ``max_connections=10`` the 11th SMTP client is not greeted while ten are held."""
    users, held = 16, 120  # Dovecot allows 10 sessions per user and address: 7 or 8 each here
    system, status = start_mail(users=users, max_connections=150)
    # Dovecot's own reading of the configuration: every per-session service is allowed that many
    # processes (its imap and pop3 services carry a built-in limit of 1,024 of their own).
    for role in ("mailbox", "access"):
        conf = status["roles"][role]["match"]
        for service in ("imap", "pop3"):
            shown = subprocess.run(
                ["doveconf", "-c", conf, "-h", f"service/{service}/process_limit"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert shown.stdout.strip() == "150", (role, service, shown.stdout)
    passwords = read_passwords(system.passwords_file)
    imap: list[imaplib.IMAP4] = []
    smtp: list[smtplib.SMTP] = []
    try:
        for n in range(held):
            user = f"user{1 + n % users}"
            client = imaplib.IMAP4("127.0.0.1", status["ports"]["proxy"], timeout=10)
            client.login(user, passwords[user])
            assert client.select("INBOX", readonly=True)[0] == "OK"
            imap.append(client)
            session = smtplib.SMTP("127.0.0.1", status["ports"]["smtp"], timeout=10)
            assert session.ehlo()[0] == 250
            smtp.append(session)
        assert all(c.noop()[0] == "OK" for c in imap)
    finally:
        for client in imap:
            client.logout()
        for session in smtp:
            session.quit()

    system.stop()
    system, status = start_mail(users=users, max_connections=10)
    port = status["ports"]["smtp"]
    first = [smtplib.SMTP("127.0.0.1", port, timeout=10) for _ in range(10)]
    try:
        with pytest.raises((TimeoutError, smtplib.SMTPServerDisconnected)):
            smtplib.SMTP("127.0.0.1", port, timeout=2)  # connected, but no smtpd to greet it
    finally:
        for session in first:
            session.quit()
