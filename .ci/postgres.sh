# Sourced by .ci/run: installs Debian's PostgreSQL server binaries if missing. The tests start
# their own throwaway servers from them (tests/support/postgres.py, and pgpair's pair), as an
# unprivileged user with random passwords; no system cluster is used or configured here.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
export CAPLAB_REQUIRE_PG=1
