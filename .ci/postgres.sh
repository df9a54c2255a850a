# Sourced by .ci/run: installs Debian's PostgreSQL if missing, starts a cluster, makes the test
# role and database, and exports CAPLAB_TEST_PG_URL. Idempotent.
if ! command -v pg_ctlcluster >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if [ -z "$(pg_lsclusters --no-header)" ]; then
    pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -1)" main
fi
read -r pg_version pg_cluster pg_port pg_status _ < <(pg_lsclusters --no-header | head -1)
[ "$pg_status" = online ] || pg_ctlcluster "$pg_version" "$pg_cluster" start
(cd / && su postgres -c "psql -X -q -v ON_ERROR_STOP=1 -p $pg_port") <<'SQL'
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'caplab') THEN
        CREATE ROLE caplab LOGIN PASSWORD 'caplab-secret';
    ELSE
        ALTER ROLE caplab LOGIN PASSWORD 'caplab-secret';
    END IF;
END $$;
SELECT 'CREATE DATABASE caplab_test OWNER caplab'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'caplab_test')\gexec
SQL
export CAPLAB_TEST_PG_URL="postgresql://caplab:caplab-secret@127.0.0.1:${pg_port}/caplab_test"
export CAPLAB_REQUIRE_PG=1
