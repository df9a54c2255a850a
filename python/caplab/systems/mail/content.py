"""The transport's content checks: Postfix ``header_checks`` and ``body_checks`` regexp tables
that every message passes through in its cleanup process, the stand-in for the paper's
antivirus and transport rules on each Hub Transport server (Forefront with five engines).

Each table holds ``rules`` signatures; a line of a message is tested against every signature
until one matches, so the CPU a message costs grows with its lines × ``rules`` (that is the
point: it costs real CPU per message, more for larger ones). One signature, ``SIGNATURE``, is
a known answer: a message that carries it in its body is rejected (550) by the content check,
which tests use to see the checks are on.
"""

from __future__ import annotations

import hashlib

SIGNATURE = "CAPLAB-TEST-MALWARE-SIGNATURE"
"""A body line holding this is rejected with ``5.7.1 rejected by content check``."""
DEFAULT_RULES = 50
"""About 10 ms of CPU per 50 KB message on this machine (0.2 ms per KB; none: 2.5 ms): the
transport is the costliest role per message, as Hub Transport with its antivirus was in the paper."""


def _signatures(kind: str, rules: int) -> list[str]:
    """``rules`` distinct patterns that ordinary text does not match: a few words of a
    signature, with alternation and a character class, as malware and spam rules are written."""
    found = []
    for i in range(rules):
        h = hashlib.sha256(f"{kind}{i}".encode()).hexdigest()
        found.append(f"/(x-{h[:6]}|{h[6:12]}[0-9a-f]{{4}}-{h[12:16]}|payload-{h[16:22]})/ REJECT")
    return found


def header_checks(rules: int = DEFAULT_RULES) -> str:
    lines = [f"{pattern} rejected by header check" for pattern in _signatures("header", rules)]
    return "# written by caplab.systems.mail: header signatures (see content.py)\n" + "\n".join(lines) + "\n"


def body_checks(rules: int = DEFAULT_RULES) -> str:
    lines = [f"/{SIGNATURE}/ REJECT 5.7.1 rejected by content check"]
    lines += [f"{pattern} rejected by body check" for pattern in _signatures("body", rules)]
    return "# written by caplab.systems.mail: body signatures (see content.py)\n" + "\n".join(lines) + "\n"
