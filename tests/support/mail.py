"""What the mail system's tests need from the machine: Debian's Postfix and Dovecot packages
(.ci/tools.sh installs them) and root, which Postfix's master requires."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGES = {
    "postfix": Path("/usr/lib/postfix/sbin/master"),
    "dovecot-core": Path("/usr/sbin/dovecot"),
    "dovecot-imapd": Path("/usr/lib/dovecot/imap"),
    "dovecot-lmtpd": Path("/usr/lib/dovecot/lmtp"),
    "dovecot-pop3d": Path("/usr/lib/dovecot/pop3"),
}


def missing_mail_packages() -> str:
    """Why the mail tests cannot run here ("" when they can)."""
    missing = [name for name, path in PACKAGES.items() if not path.exists()]
    if missing:
        return f"Debian packages missing: {' '.join(missing)} (source .ci/tools.sh as root)"
    if os.geteuid() != 0:
        return "Postfix's master runs only as root"
    return ""
