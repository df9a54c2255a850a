"""The engine's SMTP and IMAP drivers against the real mail system (Postfix and Dovecot): every
message the SMTP driver saw accepted (250 after DATA) is a file in its recipient's Maildir, and
IMAP reads through the access proxy fetch them; a wrong password is counted as `auth` with the
server's words and never the password; a certificate that fails verification stops `caplab load`
with exit 1 and says how to trust it."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from caplab import engine
from caplab.engine import LoadSpec, MailOptions, RunResult
from caplab.systems.mail import MailSystem, Settings

pytestmark = pytest.mark.usefixtures("mail_packages")

MAILBOXES = 4
MESSAGES = 40
SCHEMA = json.loads((Path(__file__).parent / "schema" / "load-result.schema.json").read_text())


@dataclass(frozen=True)
class Mail:
    system: MailSystem
    ports: dict[str, int]
    passwords: Path


@pytest.fixture(scope="module")
def mail() -> Iterator[Mail]:
    """One mail system of four users for the module (its servers run as caplab-mail, so in a
    directory every user may enter)."""
    directory = Path(tempfile.mkdtemp(prefix="caplab-test-load-mail-"))
    directory.chmod(0o755)
    system = MailSystem(directory / "work")
    try:
        status = system.start(Settings(directory / "work", users=MAILBOXES))
        yield Mail(system, status["ports"], system.passwords_file)
    finally:
        system.stop()
        shutil.rmtree(directory, ignore_errors=True)


def run(url: str, requests: int, **mail: Any) -> RunResult:
    """Exactly ``requests`` actions by one user on one thread: request n acts as user
    ``1 + n % MAILBOXES``, so which mailbox each message went to is known."""
    insecure = bool(mail.pop("insecure", False))
    spec = LoadSpec(
        url=url,
        users=1,
        threads=1,
        duration_s=30.0,
        max_requests=requests,
        insecure=insecure,
        mail=MailOptions(mailboxes=MAILBOXES, **mail),
    )
    return engine.run(engine.build_plan(spec))


def wait_delivered(system: MailSystem, total: int) -> dict[str, int]:
    deadline = time.monotonic() + 30
    while sum(system.delivered().values()) < total and time.monotonic() < deadline:
        time.sleep(0.1)
    return system.delivered()


@pytest.mark.slow
def test_every_accepted_message_is_in_its_recipients_maildir_and_imap_reads_fetch_them(mail: Mail) -> None:
    before = mail.system.delivered()
    sent = run(
        f"smtp://127.0.0.1:{mail.ports['submission']}",
        MESSAGES,
        password_file=str(mail.passwords),
        message_bytes=20_000,
        insecure=True,  # STARTTLS with the system's self-signed certificate, then AUTH
    )
    assert (sent.completed, sent.errors) == (MESSAGES, 0), sent.error_samples
    assert sent.generator.tls_handshakes == 1, "one session: STARTTLS once, then message after message"
    steps = {name: s.count for name, s in sent.steps.items()}
    assert steps == {"connect": 1, "auth": 1, "envelope": MESSAGES, "data": MESSAGES}
    expected = Counter(f"user{1 + n % MAILBOXES}" for n in range(MESSAGES))
    delivered = wait_delivered(mail.system, sum(before.values()) + MESSAGES)
    assert {u: delivered[u] - before.get(u, 0) for u in delivered} == expected
    maildir = Path(mail.system.state()["mail_dir"]) / "user1" / "new"
    sizes = [p.stat().st_size for p in maildir.iterdir()]
    assert all(20_000 <= size < 22_000 for size in sizes), sizes  # padded, plus Postfix's headers

    # Each read logs in as its user, SELECTs INBOX and FETCHes every message (1:*); the driver
    # counts a FETCH that returns fewer than SELECT announced as an error.
    read = run(
        f"imaps://127.0.0.1:{mail.ports['proxy_imaps']}",
        2 * MAILBOXES,
        password_file=str(mail.passwords),
        fetch_last=0,
        reuse=False,
        insecure=True,
    )
    assert (read.completed, read.errors) == (2 * MAILBOXES, 0), read.error_samples
    assert read.generator.tls_handshakes == 2 * MAILBOXES, "a session (and a handshake) per read"


@pytest.mark.slow
def test_a_wrong_password_is_counted_as_auth_with_the_servers_words_never_the_password(mail: Mail) -> None:
    for url in (f"imap://127.0.0.1:{mail.ports['proxy']}", f"smtps://127.0.0.1:{mail.ports['smtps']}"):
        r = run(url, 3, password="not-the-password", insecure=True)
        assert r.errors_by_kind == {"auth": 3}, url
        words = r.error_samples["auth"]
        assert "as user1" in words and ("AUTHENTICATIONFAILED" in words or "535" in words), words
        assert "not-the-password" not in json.dumps(r.raw)


@pytest.mark.slow
def test_a_certificate_that_fails_verification_stops_caplab_load(caplab_cmd: list[str], mail: Mail) -> None:
    for url, extra in (
        (f"smtp://127.0.0.1:{mail.ports['submission']}", ["--starttls"]),
        (f"imaps://127.0.0.1:{mail.ports['proxy_imaps']}", []),
    ):
        args = [url, *extra, "--password-file", str(mail.passwords), "--mailboxes", "2", "-n", "1"]
        p = subprocess.run([*caplab_cmd, "load", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        assert "invalid peer certificate" in p.stderr and "--insecure" in p.stderr, p.stderr
    ok = [f"smtps://127.0.0.1:{mail.ports['smtps']}", "--insecure", "--mailboxes", "2", "-n", "2"]
    p = subprocess.run(
        [*caplab_cmd, "load", *ok, "--password-file", str(mail.passwords), "--message-size", "2K", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    jsonschema.validate(result, SCHEMA)
    assert (result["completed"], result["classes"][0]["name"]) == (2, "send")


@pytest.mark.slow
def test_users_may_send_over_a_fresh_connection_each_time_and_keep_their_imap_session(mail: Mail) -> None:
    """``per_action: (smtp,)``: a usage profile's sends each open (and QUIT) an SMTP session, with
    its handshake and AUTH, while each user's reads share one IMAP session."""
    users = 2
    spec = LoadSpec(
        url=f"smtps://127.0.0.1:{mail.ports['smtps']}",
        users=users,
        threads=1,
        duration_s=3.0,
        insecure=True,
        mail=MailOptions(mailboxes=MAILBOXES, password_file=str(mail.passwords), per_action=("smtp",)),
        usage=(
            engine.UsageAction("send", 3600.0 * 4),
            engine.UsageAction("read", 3600.0 * 4, target=f"imaps://127.0.0.1:{mail.ports['proxy_imaps']}"),
        ),
    )
    plan = engine.build_plan(spec)
    assert plan.mail is not None and not plan.mail.reuse
    [imap] = plan.alongside
    assert imap.mail is not None and imap.mail.reuse
    assert "per_action" not in plan.to_json()
    sends, reads = engine.run(plan), engine.run(imap)
    assert sends.errors == reads.errors == 0, (sends.error_samples, reads.error_samples)
    assert sends.completed > 2 and reads.completed > 2 * users
    assert sends.steps["connect"].count == sends.steps["auth"].count == sends.completed
    assert sends.generator.tls_handshakes == sends.completed
    assert reads.steps["connect"].count == reads.generator.tls_handshakes == users
