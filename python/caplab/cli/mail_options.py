"""The options of mail targets (``smtp://``, ``smtps://``, ``imap://``, ``imaps://``), shared by
every command that drives load: who each request acts as, with which password, what a message
and a read are. They become one `MailOptions` of the load's spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from caplab.engine import MailOptions, UsageProblem, is_mail
from caplab.profiles.models import parse_size

MAIL_OPTIONS = [
    click.option(
        "--password-file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Mail URLs: user:password lines (the mail system's DIR/passwords): IMAP logs in, SMTP "
        "authenticates (AUTH) as each request's user. Never printed.",
    ),
    click.option(
        "--mailboxes",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Mail URLs: users user1…userN that requests cycle over ({user} = 1 + seq mod N).",
    ),
    click.option(
        "--mail-user",
        default="user{user}",
        show_default=True,
        help="Mail URLs: the login name of user {user}.",
    ),
    click.option(
        "--rcpt",
        default="user{user}@caplab.test",
        show_default=True,
        help="smtp(s):// URLs: the recipient of a message to user {user} ({seq} also works).",
    ),
    click.option(
        "--message-size",
        help="smtp(s):// URLs: pad each message to this size (50K, 1M); the body is --body or a line.",
    ),
    click.option(
        "--starttls/--no-starttls",
        default=None,
        help="smtp:// and imap:// URLs: require STARTTLS (verified unless --insecure), or never use "
        "it [default: when --insecure or --cacert is given and the server offers it].",
    ),
    click.option(
        "--fetch-last",
        type=click.IntRange(min=0),
        default=10,
        show_default=True,
        help="imap(s):// URLs: a read FETCHes the newest N messages of INBOX (0: all).",
    ),
    click.option(
        "--session-per-action",
        is_flag=True,
        help="Mail URLs: end the session after each send or read (QUIT, LOGOUT), so each pays connect, "
        "TLS and login; by default a user's session stays open for its next action.",
    ),
]

_NAMES = ("password_file", "mailboxes", "mail_user", "rcpt", "message_size", "starttls", "fetch_last")


def pop_mail_options(options: dict[str, Any], url: str) -> MailOptions | None:
    """Takes the mail options out of a command's options: a `MailOptions` for a mail URL, None
    otherwise (where giving one is a usage error)."""
    given = {name: options.pop(name, None) for name in _NAMES}
    per_action = bool(options.pop("session_per_action", False))
    if not is_mail(url):
        if given["password_file"] or given["message_size"] or given["starttls"] is not None or per_action:
            raise UsageProblem(
                "--password-file, --message-size, --starttls and --session-per-action apply to "
                "smtp(s):// and imap(s):// targets"
            )
        return None
    password_file: Path | None = given["password_file"]
    if password_file is not None and not password_file.is_file():
        raise UsageProblem(f"--password-file {password_file}: no such file")
    try:
        size = parse_size(given["message_size"], "--message-size") if given["message_size"] else None
    except ValueError as e:
        raise UsageProblem(str(e)) from e
    defaults = MailOptions()
    return MailOptions(
        user=given["mail_user"] or defaults.user,
        mailboxes=given["mailboxes"] or defaults.mailboxes,
        rcpt=given["rcpt"] or defaults.rcpt,
        password_file=str(password_file) if password_file else None,
        starttls=given["starttls"],
        message_bytes=size,
        fetch_last=defaults.fetch_last if given["fetch_last"] is None else given["fetch_last"],
        reuse=not per_action,
    )
