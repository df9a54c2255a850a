"""Keeping passwords out of what a reference system prints: its URLs and its database errors.

The systems stand alone (they are what caplab measures), so they carry their own small copy of
this rule rather than importing caplab's results store.
"""

from __future__ import annotations

import re

# scheme://user:password@ — the password part is everything up to the last '@' of the authority.
_URL_PASSWORD = re.compile(
    r"""(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)(?P<pw>[^\s/"'<>]*)(?P<at>@)"""
)
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword=)(?P<pw>[^\s&]*)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` URL and every
    ``password=…`` parameter replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}***{m['at']}", text)
    return _PASSWORD_PARAM.sub(lambda m: f"{m['head']}***", text)


def describe(error: BaseException) -> str:
    """A driver's error in its own words, on one line, without any password."""
    return redact(" ".join(str(error).split()))
