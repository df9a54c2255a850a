"""Who the mail servers run as: the unprivileged ``caplab-mail`` when we are root (created on first
use), ourselves otherwise. Postfix's master is the one exception: it must be root (it refuses
otherwise) and runs its children — smtpd, cleanup, qmgr, lmtp… — as this user (``mail_owner``).
Both Dovecot instances run entirely as this user (a rootless Dovecot), so their mailboxes,
sockets and logs are its files."""

from __future__ import annotations

import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.mail.errors import MailError

SERVICE_USER = "caplab-mail"


@dataclass(frozen=True)
class ServiceUser:
    """A user name with the ids to switch to, or ``uid=None`` to stay ourselves."""

    name: str
    uid: int | None = None
    gid: int | None = None

    @classmethod
    def for_servers(cls, name: str = SERVICE_USER) -> ServiceUser:
        if os.geteuid() != 0:
            return cls(pwd.getpwuid(os.geteuid()).pw_name)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            done = subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    name,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0 and "already exists" not in done.stderr:
                raise MailError(f"cannot create the system user {name}: {done.stderr.strip()}") from None
            entry = pwd.getpwnam(name)
        return cls(name, entry.pw_uid, entry.pw_gid)

    @property
    def switches(self) -> bool:
        return self.uid is not None

    def own(self, *paths: Path) -> None:
        """Hands each path (the entry itself, not a tree) to this user."""
        if self.uid is not None and self.gid is not None:
            for path in paths:
                os.chown(path, self.uid, self.gid)

    def make_dir(self, path: Path, mode: int = 0o700) -> Path:
        """``path`` (and missing parents, ours) as a directory of this user's with ``mode``."""
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)
        self.own(path)
        return path

    def write_private(self, path: Path, text: str, mode: int = 0o600) -> None:
        """Writes ``text`` into a file this user owns, created with ``mode`` (never briefly wider)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        self.own(path)
