"""A self-signed certificate for the system's TLS endpoints (SMTP STARTTLS, submission, SMTPS,
IMAPS, IMAP/POP3 STARTTLS), made with openssl at the first start and kept: clients that check
certificates need ``--insecure`` (or this file as their CA). RSA 2048, as most mail servers of
the paper's era presented, so handshake costs are of the usual kind."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.mail.errors import MailError
from caplab.systems.mail.osuser import ServiceUser

HOSTNAME = "mail.caplab.test"


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path


def self_signed(directory: Path, owner: ServiceUser) -> Certificate:
    """``directory/cert.pem`` and ``key.pem`` (0600, the service user's), made if missing."""
    made = Certificate(directory / "cert.pem", directory / "key.pem")
    if made.cert.exists() and made.key.exists():
        return made
    owner.make_dir(directory, 0o700)
    command = [
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
        "-subj", f"/CN={HOSTNAME}",
        "-addext", f"subjectAltName=DNS:{HOSTNAME},DNS:localhost,IP:127.0.0.1",
        "-keyout", str(made.key), "-out", str(made.cert),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        raise MailError(
            "openssl is not installed (apt-get install -y openssl); or start with --no-tls"
        ) from None
    if done.returncode != 0:
        raise MailError(f"openssl could not make a certificate: {done.stderr.strip()[-500:]}")
    made.key.chmod(0o600)
    owner.own(made.key, made.cert)
    return made
