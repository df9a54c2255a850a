"""pgha: PostgreSQL under Patroni with etcd (docstring to come)."""
