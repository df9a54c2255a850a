"""The PostgreSQL servers' OS user when we are root, created on first use: two processes that start
a server at the same moment (the test suite's two workers, each starting its own PostgreSQL) both
find it missing, and the one whose useradd fails because the other created it goes on with it."""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from caplab.systems.pgpair import server
from caplab.systems.pgpair.server import ServerError, ServerUser

ENTRY = SimpleNamespace(pw_uid=998, pw_gid=997)
"""What for_servers reads of pwd's entry (a pwd.struct_passwd made here upsets CPython at exit)."""


def as_root_with(monkeypatch: pytest.MonkeyPatch, exists_after: int, useradd_fails: bool) -> list[str]:
    """Root, a user that appears at the ``exists_after``-th look, and a useradd that fails (another
    process holds /etc/passwd) or succeeds; returns the commands run."""
    looks, ran = [0], []

    def getpwnam(name: str) -> SimpleNamespace:
        looks[0] += 1
        if looks[0] < exists_after:
            raise KeyError(name)
        return ENTRY

    def run(cmd: Sequence[str], **_: Any) -> str:
        ran.append(cmd[0])
        if useradd_fails:
            raise ServerError("useradd failed (exit 1): useradd: cannot lock /etc/passwd; try again later.")
        return ""

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(server, "_run", run)
    monkeypatch.setattr(time, "sleep", lambda _: None)
    return ran


def test_a_user_created_by_another_process_meanwhile_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = as_root_with(monkeypatch, exists_after=2, useradd_fails=True)
    user = ServerUser.for_servers()
    assert (user.name, user.uid, user.gid) == ("caplab-pg", 998, 997)
    assert ran == ["useradd"]


def test_a_user_that_cannot_be_created_is_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = as_root_with(monkeypatch, exists_after=99, useradd_fails=True)
    with pytest.raises(ServerError, match="cannot lock /etc/passwd"):
        ServerUser.for_servers()
    assert ran == ["useradd"] * server.USERADD_TRIES


def test_an_existing_user_is_used_without_useradd(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = as_root_with(monkeypatch, exists_after=1, useradd_fails=False)
    assert ServerUser.for_servers().uid == 998 and ran == []
