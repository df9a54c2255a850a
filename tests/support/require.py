"""What a test needs of the machine beyond Python: root and cgroups for hardware profiles, Debian's
slapd, Postfix and Dovecot, Patroni and etcd. Without it the test skips, saying why in pytest's
summary (``-ra``, set in pyproject.toml and the Makefile) — unless the requirement's switch is
``1``, where a missing requirement fails the test instead. ``.ci/tools.sh`` sets every switch, so
in CI nothing that should run is skipped without a failure; the switches that predate this module
(``CAPLAB_REQUIRE_PG``, ``_CHROMIUM``, ``_FIO``, ``_NODE_EXPORTER``) work the same way."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

from caplab.profiles import Profile, check_support

PG = "CAPLAB_REQUIRE_PG"
"""PostgreSQL's server binaries and pgbench (postgresql, postgresql-contrib)."""
PROFILES = "CAPLAB_REQUIRE_PROFILES"
"""Hardware profiles: root, writable cgroups, loop devices, network namespaces, tc."""
SLAPD = "CAPLAB_REQUIRE_SLAPD"
"""OpenLDAP's slapd and its tools (idsync's directory)."""
MAIL = "CAPLAB_REQUIRE_MAIL"
"""Postfix and Dovecot, and root for Postfix's master (the mail reference system)."""
PATRONI = "CAPLAB_REQUIRE_PATRONI"
"""Patroni and etcd (Debian's patroni, etcd-server), for the pgha reference system."""
NGINX = "CAPLAB_REQUIRE_NGINX"
"""nginx (Debian's nginx-light): a server far cheaper than the generator, for the shared-host
search; tests start their own worker with their own configuration."""
TOOLS = "CAPLAB_REQUIRE_TOOLS"
"""Command-line tools a test watches or drives caplab with (strace, fio), which .ci/tools.sh
installs."""


def require(switch: str, missing: str | Iterable[str]) -> None:
    """Nothing when ``missing`` is empty; else skip the test with why — or fail it, when
    ``$switch`` is ``1``. Hidden from the traceback, so the summary names the test's line."""
    __tracebackhide__ = True
    reasons = [missing] if isinstance(missing, str) else list(missing)
    why = "; ".join(r for r in reasons if r)
    if not why:
        return
    if os.environ.get(switch) == "1":
        pytest.fail(f"required here ({switch}=1), but {why}", pytrace=False)
    pytest.skip(f"{why} (set {switch}=1 to fail instead)")


def require_profiles(*profiles: Profile) -> None:
    """Skip (or fail, under ``CAPLAB_REQUIRE_PROFILES=1``) naming exactly the mechanism this
    machine lacks for ``profiles``."""
    __tracebackhide__ = True
    require(PROFILES, check_support(profiles))
