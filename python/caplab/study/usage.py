"""A usage profile as the engine runs it: each validated action of a study's ``load.usage`` (or of
``caplab load --usage FILE``) becomes one `UsageAction`, its body file read relative to the file
that named it; a study's mail target becomes the URL and `MailOptions` of the protocol it drives."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from caplab.engine import LoadSpec, MailOptions, UsageAction
from caplab.spec import MailTargetSpec, UsageSpec


def usage_actions(
    usage: UsageSpec, directory: Path, targets: dict[str, str] | None = None
) -> tuple[UsageAction, ...]:
    """The profile's actions in file order, rates per user-hour, bodies read from their files;
    ``targets`` gives the URL of each ``target:`` an action may name (a mail target's protocols)."""
    return tuple(
        UsageAction(
            name=name,
            per_hour=action.rate_per_hour,
            method=action.method,
            path=action.path,
            headers=tuple(action.headers.items()),
            body=_read(directory / action.body_file) if action.body_file else action.body or "",
            template=action.template,
            target=(targets or {}).get(action.target) if action.target else None,
        )
        for name, action in usage.actions.items()
    )


def _read(path: Path) -> str:
    """A body file exactly as written: its line ends kept (a message's CRLFs are the protocol's)."""
    return path.read_bytes().decode("utf-8")


def mail_load(mail: MailTargetSpec, shape: LoadSpec, usage: UsageSpec | None, directory: Path) -> LoadSpec:
    """A study's load on its mail target: the URL of the protocol it drives first (checked when the
    study was read), the mail options, and the usage profile's actions, each with its protocol's
    URL (those of the other protocol then run beside: see `engine.build_plan`)."""
    protocol = mail.driven(usage)
    url = mail.smtp if protocol == "smtp" else mail.imap
    assert url is not None
    options = MailOptions(
        user=mail.user,
        mailboxes=mail.mailboxes,
        rcpt=mail.rcpt,
        password_file=str(directory / mail.password_file) if mail.password_file else None,
        starttls=mail.starttls,
        message_bytes=mail.message_size,
        fetch_last=mail.fetch_last,
        reuse=mail.session_per_action is not True,
        per_action=tuple(mail.session_per_action) if isinstance(mail.session_per_action, list) else (),
    )
    urls = {p: u for p, u in (("smtp", mail.smtp), ("imap", mail.imap)) if u is not None}
    actions = usage_actions(usage, directory, urls) if usage is not None else None
    return replace(shape, url=url, mail=options, insecure=mail.insecure, usage=actions)
