"""Alembic environment: pganon always hands in an open SQLAlchemy connection (see pganon.install),
so the catalog migration runs in the same transaction as the rest of the install."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    version_table="alembic_version",
    version_table_schema="pganon",
    transactional_ddl=True,
)
context.run_migrations()
