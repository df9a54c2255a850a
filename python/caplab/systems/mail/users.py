"""The provisioned mailboxes: ``user1…userN`` at DOMAIN, each with a random password.

Two files, both mode 0600:

- ``WORK/passwords``: ``user:password`` per line, ours (root's when we are root) — what load
  generators read to log in. The passwords are never printed.
- the Dovecot passdb (a passwd-file of the service user's): ``user:{SSHA512}hash`` per line,
  read by both Dovecot instances and, through the mailbox instance's auth socket, by Postfix's
  submission service. A salted SHA-512 costs microseconds per login, so authentication does not
  dominate what is measured (as a bcrypt-style hash would).

The users are made once; a start with a larger ``--users`` adds users and keeps the others'
passwords, a smaller one keeps them all (the mailboxes of the rest stay on disk).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from pathlib import Path

from caplab.systems.mail.errors import MailError
from caplab.systems.mail.osuser import ServiceUser

DOMAIN = "caplab.test"


def user_name(i: int) -> str:
    return f"user{i}"


def address(user: str) -> str:
    return f"{user}@{DOMAIN}"


def read_passwords(path: Path) -> dict[str, str]:
    """``{user: password}`` from a passwords file (``user:password`` lines)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise MailError(f"cannot read the passwords file {path}: {e.strerror}") from None
    found = {}
    for line in text.splitlines():
        user, sep, password = line.partition(":")
        if sep and user:
            found[user] = password
    return found


def provision(passwords_file: Path, passdb: Path, users: int, owner: ServiceUser) -> dict[str, str]:
    """Makes (or extends) ``users`` users; writes both files; returns ``{user: password}``."""
    if users < 1:
        raise MailError(f"--users must be at least 1 (got {users})")
    known = read_passwords(passwords_file)
    for i in range(1, users + 1):
        known.setdefault(user_name(i), secrets.token_urlsafe(12))
    ordered = sorted(known, key=lambda u: int(u.removeprefix("user")) if u[4:].isdigit() else 0)
    ServiceUser("self").write_private(passwords_file, "".join(f"{u}:{known[u]}\n" for u in ordered))
    owner.write_private(passdb, "".join(f"{u}:{ssha512(known[u])}\n" for u in ordered))
    return known


def ssha512(password: str) -> str:
    """Dovecot's ``{SSHA512}``: base64 of SHA-512(password + salt) followed by the salt."""
    salt = secrets.token_bytes(8)
    digest = hashlib.sha512(password.encode() + salt).digest()
    return "{SSHA512}" + base64.b64encode(digest + salt).decode()
