"""The results store: studies, cells, trials, intervals, histograms, resource samples, events.

SQLAlchemy Core over SQLite (default ``./caplab.db`` or ``$CAPLAB_DB``) or PostgreSQL
(``postgresql://…``), schema managed by Alembic migrations. Every write that belongs together is one
transaction, so a run killed at any moment leaves a consistent store.
"""

from caplab.store.document import DocumentFormatError, StudyDocument
from caplab.store.errors import NotFound, StoreError, StudyNotFound
from caplab.store.repository import CellRow, Store, StudyRow, default_url, redact_url

__all__ = [
    "CellRow",
    "DocumentFormatError",
    "NotFound",
    "Store",
    "StoreError",
    "StudyDocument",
    "StudyNotFound",
    "StudyRow",
    "default_url",
    "redact_url",
]
