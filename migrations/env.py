"""Alembic environment: pganon always hands in an open SQLAlchemy connection (see pganon.install),
so the catalog migration runs in the same transaction as the rest of the install. That connection
pins search_path (pganon.connection): a migration runs as superuser in a database whose public
schema others may write to, so it must never resolve a name there; refuse any other connection."""

from alembic import context

from pganon.connection import PINNED_SEARCH_PATH

connection = context.config.attributes["connection"]
path = connection.exec_driver_sql("SHOW search_path").scalar()
if path != PINNED_SEARCH_PATH:
    raise RuntimeError(f"catalog migrations need search_path pinned to {PINNED_SEARCH_PATH}, not {path!r}: "
                       "run them through `pganon install`")
context.configure(
    connection=connection,
    version_table="alembic_version",
    version_table_schema="pganon",
    transactional_ddl=True,
)
context.run_migrations()
