"""Alembic's entry point for the store's migrations, run programmatically by ``caplab.store.migrate``.

The caller hands over its open connection (``config.attributes["connection"]``) inside a
transaction it owns, so the upgrade commits or rolls back as one unit with the caller's locking.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from caplab.store.schema import metadata

if context.is_offline_mode():
    raise RuntimeError("caplab's store migrations run online only (caplab.store.migrate.upgrade)")

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError("run the store's migrations through caplab.store.migrate.upgrade")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
)
with context.begin_transaction():
    context.run_migrations()
