"""A cell's failover entries number their trial from 0, as its recovery and ledger entries do.

Before this revision the runner stored a failover entry's ``trial`` 1-based and the recovery and
ledger entries' 0-based, so the report added 1 in one table and not in the other. Every stored
``trial`` is now the trial's 0-based place in its cell (experiments/failover.py); this rewrites
the failover entries of cells stored before, so a report shows their trials as it did.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_cells = sa.table("cells", sa.column("id", sa.Integer), sa.column("metrics", sa.JSON(none_as_null=True)))


def _shift(by: int) -> None:
    """Adds ``by`` to the trial of every failover entry of every stored cell."""
    conn = op.get_bind()
    for cell_id, metrics in conn.execute(sa.select(_cells.c.id, _cells.c.metrics)).all():
        entries = metrics.get("failover") if isinstance(metrics, dict) else None
        if not entries:
            continue
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("trial"), int):
                entry["trial"] += by
        conn.execute(_cells.update().where(_cells.c.id == cell_id).values(metrics=metrics))


def upgrade() -> None:
    _shift(-1)


def downgrade() -> None:
    _shift(+1)
